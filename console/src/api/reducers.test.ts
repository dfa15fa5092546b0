import { describe, expect, test } from 'vitest';
import { foldDevices, foldLog, foldMetrics, foldModels, foldQueues, foldResidency } from './reducers.js';
import type { MetricValues, ModelEntry, ModelView, ModelResidencyView, StreamMessage, WorkerView } from './types.js';

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
  const events = (...seqs: number[]) => delta('events', { items: seqs.map(e) });
  test('puts the newest first, deduplicated by seq', () => {
    const prev = [e(2), e(1)];
    expect(foldLog(prev, events(3))).toEqual([e(3), e(2), e(1)]);
    expect(foldLog(prev, events(3, 4, 5))).toEqual([e(5), e(4), e(3), e(2), e(1)]);
    expect(foldLog(prev, snapshot('events', { items: [e(1), e(2), e(3), e(4)] }))).toEqual([e(4), e(3), e(2), e(1)]);
  });
  test('keeps at most cap entries and returns the same array when nothing is new', () => {
    expect(foldLog([e(2), e(1)], events(3), 2)).toEqual([e(3), e(2)]);
    expect(foldLog([e(2), e(1)], events(3, 4, 5), 2)).toEqual([e(5), e(4)]);
    const prev = [e(1)];
    expect(foldLog(prev, events(1))).toBe(prev);
    expect(foldLog(prev, events())).toBe(prev);
  });
  test('an entry older than the newest held goes in its place, not in front', () => {
    expect(foldLog([e(5), e(3)], events(4))).toEqual([e(5), e(4), e(3)]);
    expect(foldLog([e(5), e(3)], events(4, 6))).toEqual([e(6), e(5), e(4), e(3)]);
    expect(foldLog([], events(4))).toEqual([e(4)]);
  });
});

describe('foldMetrics', () => {
  const v = (requestsPerSecond: number, p99Ms: number | null = null): MetricValues => ({
    requestsPerSecond,
    p50Ms: p99Ms === null ? null : p99Ms / 2,
    p99Ms,
    queueDepth: 0,
    residentBytes: 0,
    loads: 0,
    evictions: 0,
  });
  const totals = (requestsPerSecond: number) => ({
    requestsPerSecond,
    p50Ms: null,
    p99Ms: null,
    loads: 0,
    evictions: 0,
  });
  const tick = (at: number, upsert: Record<string, MetricValues> = {}, remove: string[] = [], rps = 0) =>
    delta('metrics', { at, totals: totals(rps), upsert, remove });

  test('a snapshot holds every model and the recent totals; a delta sets what changed and adds its totals', () => {
    let s = foldMetrics(
      undefined,
      snapshot('metrics', {
        at: 2000,
        items: { a: v(5, 4), b: v(0), c: v(2, 8) },
        recent: [
          { at: 1000, totals: totals(1) },
          { at: 2000, totals: totals(7) },
        ],
      }),
    );
    s = foldMetrics(s, tick(3000, { a: v(7, 3) }, ['c'], 7));
    expect(Object.fromEntries(s.latest)).toEqual({ a: v(7, 3), b: v(0) });
    expect(s.totals.map((t) => [t.at, t.requestsPerSecond])).toEqual([
      [1000, 1],
      [2000, 7],
      [3000, 7],
    ]);
  });

  test('an idle tick adds a point and keeps the latest samples the same object', () => {
    const s0 = foldMetrics(undefined, snapshot('metrics', { at: 1000, items: { a: v(1) } }));
    expect(s0.totals).toEqual([]);
    const s1 = foldMetrics(s0, tick(2000));
    expect(s1.latest).toBe(s0.latest);
    expect(s1.totals.map((t) => t.at)).toEqual([2000]);
    // Removing a model that is not there changes nothing either.
    expect(foldMetrics(s1, tick(3000, {}, ['zz'])).latest).toBe(s0.latest);
  });

  test('keeps at most `cap` points, dropping the oldest, from a snapshot and from deltas', () => {
    const recent = [1, 2, 3, 4].map((at) => ({ at, totals: totals(at) }));
    let s = foldMetrics(undefined, snapshot('metrics', { at: 4, items: {}, recent }), 3);
    expect(s.totals.map((t) => t.at)).toEqual([2, 3, 4]);
    for (const at of [5, 6]) s = foldMetrics(s, tick(at), 3);
    expect(s.totals.map((t) => t.at)).toEqual([4, 5, 6]);
  });

  test('a tick not newer than the last takes its samples but adds no point', () => {
    const s0 = foldMetrics(undefined, tick(2000, { a: v(1) }));
    const s1 = foldMetrics(s0, tick(2000, { a: v(3) }));
    expect(s1.totals).toHaveLength(1);
    expect(s1.latest.get('a')).toEqual(v(3));
  });
});
