import { describe, expect, test } from 'vitest';
import { foldDevices, foldLog, foldModels, foldQueues, foldResidency, foldTicks } from './reducers.js';
import type { MetricsTick, ModelEntry, ModelView, ModelResidencyView, StreamMessage, WorkerView } from './types.js';

const entry = (name: string, state: ModelEntry['state'] = 'READY'): ModelEntry => ({
  name,
  version: '1',
  state,
  reason: '',
  batchSizes: [1, 8],
  policy: null,
  drain: null,
});
const row = (name: string, extra: Partial<ModelView> = {}): ModelView => ({
  ...entry(name),
  residency: null,
  queue: null,
  stats: null,
  ...extra,
});
const res = (weightBytes: number, deviceResident = true): ModelResidencyView => ({
  floor: 'unpinned',
  weightBytes,
  deviceResident,
  hostResident: true,
  loading: false,
  leases: 0,
  loads: 1,
  evictions: 0,
  lastUsedAt: null,
});
const delta = (topic: string, data: unknown, seq = 2): StreamMessage => ({ topic, seq, kind: 'delta', data });
const snapshot = (topic: string, data: unknown, seq = 1): StreamMessage => ({ topic, seq, kind: 'snapshot', data });

describe('foldModels', () => {
  test('a delta updates rows in place, appends new ones and removes gone ones, keeping residency', () => {
    const prev = [row('a', { residency: res(10) }), row('b'), row('c')];
    const next = foldModels(
      prev,
      delta('models', { upsert: { a: entry('a', 'LOADING'), d: entry('d') }, remove: ['b'] }),
    );
    expect(next.map((m) => `${m.name}:${m.state}`)).toEqual(['a:LOADING', 'c:READY', 'd:READY']);
    expect(next[0]!.residency).toEqual(res(10));
    expect(next[1]).toBe(prev[2]); // untouched rows keep their identity (memoised table rows)
    expect(prev).toHaveLength(3); // the cached array is never mutated
  });

  test('a snapshot replaces the set of rows', () => {
    const next = foldModels([row('a'), row('b')], snapshot('models', { items: { b: entry('b'), z: entry('z') } }));
    expect(next.map((m) => m.name)).toEqual(['b', 'z']);
  });

  test('a drain and its lifting arrive on the models topic', () => {
    const drain = { since: 5, pending: 2, idle: false };
    const drained = foldModels([row('a')], delta('models', { upsert: { a: { ...entry('a'), drain } }, remove: [] }));
    expect(drained[0]!.drain).toEqual(drain);
    const resumed = foldModels(drained, delta('models', { upsert: { a: entry('a') }, remove: [] }));
    expect(resumed[0]!.drain).toBeNull();
  });

  test('starts from nothing when the REST answer has not landed', () => {
    expect(
      foldModels(undefined, delta('models', { upsert: { x: entry('x') }, remove: [] })).map((m) => m.name),
    ).toEqual(['x']);
  });
});

describe('foldResidency / foldQueues', () => {
  test('set the field per model and ignore device entries', () => {
    const prev = [row('a'), row('b')];
    const next = foldResidency(
      prev,
      delta('residency', { upsert: { a: res(5), 'device:0': { ordinal: 0 } }, remove: [] }),
    )!;
    expect(next[0]!.residency).toEqual(res(5));
    expect(next[1]).toBe(prev[1]);
  });
  test('a snapshot clears the field of models it does not name', () => {
    const prev = [row('a', { residency: res(5) }), row('b', { residency: res(6) })];
    const next = foldResidency(prev, snapshot('residency', { items: { b: res(7) } }))!;
    expect(next.map((m) => m.residency?.weightBytes ?? null)).toEqual([null, 7]);
  });
  test('return the same array when nothing changed', () => {
    const prev = [row('a')];
    expect(foldQueues(prev, delta('queues', { upsert: {}, remove: [] }))).toBe(prev);
  });
  test('queues land in the queue field', () => {
    const next = foldQueues(
      [row('a')],
      delta('queues', { upsert: { a: { depth: 3, rows: 3, inflight: 1 } }, remove: [] }),
    )!;
    expect(next[0]!.queue).toEqual({ depth: 3, rows: 3, inflight: 1 });
  });
});

describe('foldDevices', () => {
  const worker: WorkerView = {
    name: 'w0',
    version: '0.1.0',
    platform: 'cpu',
    modelControlMode: 'explicit',
    discipline: 'fair',
    ready: true,
    inflight: 0,
    devices: [
      {
        ordinal: 0,
        platform: 'cpu',
        totalBytes: null,
        budgetBytes: 100,
        residentBytes: 10,
        pinnedBytes: 0,
        arenaBytes: null,
        freeBytes: 90,
      },
    ],
  };
  test('replaces a device by ordinal from its device:<n> entry', () => {
    const d = { ...worker.devices[0]!, residentBytes: 60, freeBytes: 40 };
    const next = foldDevices([worker], delta('residency', { upsert: { 'device:0': d, a: res(1) }, remove: [] }))!;
    expect(next[0]!.devices).toEqual([d]);
  });
  test('leaves the workers untouched without device entries', () => {
    const prev = [worker];
    expect(foldDevices(prev, delta('residency', { upsert: { a: res(1) }, remove: [] }))).toBe(prev);
  });
});

describe('foldLog', () => {
  const e = (seq: number) => ({ seq });
  test('puts the newest first, deduplicated by seq', () => {
    const prev = [e(2), e(1)];
    expect(foldLog(prev, delta('events', e(3)))).toEqual([e(3), e(2), e(1)]);
    expect(foldLog(prev, snapshot('events', { items: [e(1), e(2), e(3), e(4)] }))).toEqual([e(4), e(3), e(2), e(1)]);
  });
  test('keeps at most cap entries and returns the same array when nothing is new', () => {
    expect(foldLog([e(2), e(1)], delta('events', e(3)), 2)).toEqual([e(3), e(2)]);
    const prev = [e(1)];
    expect(foldLog(prev, delta('events', e(1)))).toBe(prev);
  });
});

describe('foldTicks', () => {
  const t = (at: number): MetricsTick => ({ at, models: {} });
  test('appends in time order and drops the oldest past the cap', () => {
    let s = foldTicks(undefined, snapshot('metrics', { items: [t(1)] }), 3);
    for (const at of [2, 3, 4]) s = foldTicks(s, delta('metrics', t(at)), 3);
    expect(s.map((x) => x.at)).toEqual([2, 3, 4]);
  });
  test('ignores a tick not newer than the last (a replay after resume)', () => {
    const s = foldTicks(foldTicks(undefined, delta('metrics', t(5))), delta('metrics', t(5)));
    expect(s).toHaveLength(1);
  });
});
