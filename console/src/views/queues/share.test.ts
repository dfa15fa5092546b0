import { describe, expect, test } from 'vitest';
import type { QueueModelView, QueuesView } from '../../api/types.js';
import { queueRows } from './rows.js';
import { busiestModels, foldQueueSample, overallShare } from './share.js';

const qm = (name: string, computeSecondsTotal: number, extra: Partial<QueueModelView> = {}): QueueModelView => ({
  name,
  weight: 1,
  depth: 0,
  rows: 0,
  inflight: 0,
  oldestWaitMs: 0,
  deadlineMisses: 0,
  requestsServed: 0,
  computeSecondsTotal,
  recentComputeSeconds: 0,
  contendedShare: 0,
  weightShare: 0.5,
  ...extra,
});
const answer = (at: number, models: QueueModelView[]): QueuesView => ({ at, discipline: 'fair', executing: 0, models });

describe('device share over time from successive /queues answers', () => {
  test('the first answer is the baseline; each later one adds the interval shares of device time', () => {
    let h = foldQueueSample(undefined, answer(1000, [qm('a', 10), qm('b', 5)]));
    expect(h.points).toEqual([]);
    h = foldQueueSample(h, answer(3000, [qm('a', 13), qm('b', 6)]));
    expect(h.points).toHaveLength(1);
    expect(h.points[0]!.device).toEqual({ a: 0.75, b: 0.25 });
    expect(h.points[0]!.weight).toEqual({ a: 0.5, b: 0.5 });
    expect(h.points[0]!.busySeconds).toBeCloseTo(4);
  });

  test('an idle interval has no shares; a repeated or older answer changes nothing', () => {
    let h = foldQueueSample(undefined, answer(1000, [qm('a', 10)]));
    h = foldQueueSample(h, answer(2000, [qm('a', 10)]));
    expect(h.points[0]!.device).toEqual({});
    expect(h.points[0]!.busySeconds).toBe(0);
    expect(foldQueueSample(h, answer(2000, [qm('a', 99)]))).toBe(h);
    expect(foldQueueSample(h, answer(1500, [qm('a', 99)]))).toBe(h);
  });

  test('a model new in this answer, or whose counters restarted, counts no time for the interval', () => {
    let h = foldQueueSample(undefined, answer(1000, [qm('a', 10)]));
    h = foldQueueSample(h, answer(2000, [qm('a', 2), qm('b', 50)]));
    expect(h.points[0]!.busySeconds).toBe(0);
    h = foldQueueSample(h, answer(3000, [qm('a', 3), qm('b', 51)]));
    expect(h.points[1]!.device).toEqual({ a: 0.5, b: 0.5 });
  });

  test('keeps at most cap points, dropping the oldest', () => {
    let h = foldQueueSample(undefined, answer(0, [qm('a', 0)]));
    for (let i = 1; i <= 10; i++) h = foldQueueSample(h, answer(i * 1000, [qm('a', i)]), 4);
    expect(h.points.map((p) => p.at)).toEqual([7000, 8000, 9000, 10000]);
  });

  test('busiest models and the share over the whole history weigh intervals by their device time', () => {
    let h = foldQueueSample(undefined, answer(0, [qm('a', 0), qm('b', 0), qm('c', 0)]));
    h = foldQueueSample(h, answer(1000, [qm('a', 1), qm('b', 0), qm('c', 0)])); // a alone, 1 s
    h = foldQueueSample(h, answer(2000, [qm('a', 1), qm('b', 3), qm('c', 0)])); // b alone, 3 s
    expect(busiestModels(h, 5)).toEqual(['b', 'a']);
    expect(busiestModels(h, 1)).toEqual(['b']);
    const overall = overallShare(h)!;
    expect(overall.get('a')).toBeCloseTo(0.25);
    expect(overall.get('b')).toBeCloseTo(0.75);
    expect(overallShare(foldQueueSample(undefined, answer(0, [qm('a', 0)])))).toBeNull();
  });
});

describe('the queues table rows', () => {
  test('live queue figures from the feed win over the polled ones; busiest first', () => {
    const scheduled = [qm('idle', 0), qm('deep', 0, { depth: 1 }), qm('busy', 0)];
    const live = [
      {
        name: 'deep',
        version: '1',
        state: 'READY' as const,
        reason: '',
        batchSizes: [1],
        residency: null,
        policy: null,
        stats: null,
        drain: null,
        queue: { depth: 7, rows: 7, inflight: 1, oldestWaitMs: 40, deadlineMisses: 2 },
      },
    ];
    const rows = queueRows(scheduled, live, new Map([['busy', 1]]), '');
    expect(rows.all.map((r) => r.name)).toEqual(['deep', 'busy', 'idle']);
    expect(rows.all[0]).toMatchObject({ depth: 7, oldestWaitMs: 40, inflight: 1, deadlineMisses: 2 });
    expect(rows.all[1]!.deviceShare).toBe(1);
    expect(rows.all[2]!.deviceShare).toBe(0);
  });

  test('idle models beyond the limit are left out unless searched for; busy ones never are', () => {
    const scheduled = Array.from({ length: 300 }, (_, i) =>
      qm(`m${String(i).padStart(3, '0')}`, 0, { depth: i < 150 ? 1 : 0 }),
    );
    const rows = queueRows(scheduled, [], null, '', 100);
    expect(rows.all).toHaveLength(300);
    expect(rows.shown).toHaveLength(150);
    expect(queueRows(scheduled, [], null, 'm29').shown.map((r) => r.name)).toEqual(
      Array.from({ length: 10 }, (_, i) => `m29${i}`),
    );
    expect(queueRows(scheduled, [], null, '').all[0]!.deviceShare).toBeNull();
  });
});
