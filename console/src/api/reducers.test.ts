import { describe, expect, test } from 'vitest';
import { applyAppendDelta, applyListDelta, applyTick } from './reducers.js';
import type { MetricsTick } from './types.js';

const m = (name: string, rps = 0) => ({ name, rps });

describe('applyListDelta', () => {
  test('updates in place, keeps order, appends new names and reports them as structural', () => {
    const prev = [m('a'), m('b'), m('c')];
    const { next, structural } = applyListDelta(prev, { upsert: [m('b', 5), m('d', 1)] });
    expect(next).toEqual([m('a'), m('b', 5), m('c'), m('d', 1)]);
    expect(structural).toEqual(['d']);
    expect(prev[1]).toEqual(m('b')); // the cached array is never mutated
  });

  test('removes names and reports them; an upsert and a remove of one name in one delta removes it', () => {
    const { next, structural } = applyListDelta([m('a'), m('b')], { upsert: [m('b', 2), m('z')], remove: ['b', 'z'] });
    expect(next).toEqual([m('a')]);
    expect(structural).toEqual(['b']);
  });

  test('starts from nothing when the cache is empty', () => {
    expect(applyListDelta(undefined, { upsert: [m('x')] }).next).toEqual([m('x')]);
  });

  test('unchanged rows keep their identity so memoised table rows do not re-render', () => {
    const prev = [m('a'), m('b')];
    const { next } = applyListDelta(prev, { upsert: [m('b', 9)] });
    expect(next[0]).toBe(prev[0]);
  });
});

describe('applyAppendDelta', () => {
  const e = (id: string) => ({ id });
  test('puts the newest first and ignores entries already held', () => {
    const prev = [e('2'), e('1')];
    expect(applyAppendDelta(prev, { append: [e('2'), e('3'), e('4')] })).toEqual([e('4'), e('3'), e('2'), e('1')]);
  });
  test('keeps at most cap entries', () => {
    const prev = [e('2'), e('1')];
    expect(applyAppendDelta(prev, { append: [e('3')] }, 2)).toEqual([e('3'), e('2')]);
  });
  test('returns the same array when nothing is new', () => {
    const prev = [e('1')];
    expect(applyAppendDelta(prev, { append: [e('1')] })).toBe(prev);
  });
});

describe('applyTick', () => {
  const t = (timeMs: number): MetricsTick => ({
    timeMs,
    requestsPerSecond: 1,
    p50Ms: 1,
    p99Ms: 2,
    errorsPerSecond: 0,
    loadsPerMinute: 0,
    evictionsPerMinute: 0,
  });
  test('appends in time order and drops the oldest past the cap', () => {
    let s = applyTick(undefined, t(1), 3);
    s = applyTick(s, t(2), 3);
    s = applyTick(s, t(3), 3);
    s = applyTick(s, t(4), 3);
    expect(s.map((x) => x.timeMs)).toEqual([2, 3, 4]);
  });
  test('ignores a tick not newer than the last one (a replay after resume)', () => {
    const s = applyTick(applyTick(undefined, t(5)), t(5));
    expect(s).toHaveLength(1);
  });
});
