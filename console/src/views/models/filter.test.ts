import { describe, expect, test } from 'vitest';
import type { ModelView, ModelResidencyView } from '../../api/types.js';
import { defaultQuery, selectRows, toRow, toRows, type RowCache } from './filter.js';

const res = (extra: Partial<ModelResidencyView> = {}): ModelResidencyView => ({
  floor: 'unpinned',
  weightBytes: 100,
  deviceResident: true,
  hostResident: true,
  loading: false,
  leases: 0,
  loads: 1,
  evictions: 0,
  lastUsedAt: null,
  ...extra,
});
const model = (name: string, extra: Partial<ModelView> = {}): ModelView => ({
  name,
  version: '1',
  state: 'READY',
  reason: '',
  batchSizes: [1],
  residency: res(),
  policy: null,
  queue: null,
  stats: null,
  drain: null,
  ...extra,
});
const sample = (rps: number) => ({
  at: 0,
  requestsPerSecond: rps,
  p50Ms: null,
  p99Ms: null,
  queueDepth: 0,
  residentBytes: 0,
  loads: 0,
  evictions: 0,
});

describe('selectRows', () => {
  const rows = [
    toRow(model('resnet', { residency: res({ deviceResident: false }) }), sample(9)),
    toRow(model('bert', { state: 'UNAVAILABLE', residency: null }), undefined),
    toRow(model('mnist', { residency: res({ floor: 'device' }) }), sample(2)),
  ];
  test('searches names case-insensitively', () => {
    expect(selectRows(rows, { ...defaultQuery, search: 'NIS' }).map((m) => m.name)).toEqual(['mnist']);
  });
  test('filters by state and by where the weights are, pinned counting as its own filter', () => {
    expect(selectRows(rows, { ...defaultQuery, state: 'UNAVAILABLE' }).map((m) => m.name)).toEqual(['bert']);
    expect(selectRows(rows, { ...defaultQuery, residency: 'pinned' }).map((m) => m.name)).toEqual(['mnist']);
    expect(selectRows(rows, { ...defaultQuery, residency: 'host' }).map((m) => m.name)).toEqual(['resnet']);
    expect(selectRows(rows, { ...defaultQuery, residency: 'none' }).map((m) => m.name)).toEqual(['bert']);
  });
  test('sorts both ways with missing values last', () => {
    const q = { ...defaultQuery, sort: 'requestsPerSecond' as const };
    expect(selectRows(rows, q).map((m) => m.name)).toEqual(['mnist', 'resnet', 'bert']);
    expect(selectRows(rows, { ...q, desc: true }).map((m) => m.name)).toEqual(['resnet', 'mnist', 'bert']);
  });
  test('never reorders the rows it was given', () => {
    selectRows(rows, { ...defaultQuery, sort: 'requestsPerSecond' });
    expect(rows.map((m) => m.name)).toEqual(['resnet', 'bert', 'mnist']);
  });
  test('last used and p99 come through, and sort with never-used models last', () => {
    const used = [
      toRow(model('a', { residency: res({ lastUsedAt: 5000 }) }), { ...sample(1), p99Ms: 12 }),
      toRow(model('b', { residency: res() }), undefined),
      toRow(model('c', { residency: res({ lastUsedAt: 9000 }) }), sample(1)),
    ];
    expect(used[0]!.p99).toBe(12);
    expect(used[0]!.lastUsed).toBe(5000);
    const recentFirst = { ...defaultQuery, sort: 'lastUsed' as const, desc: true };
    expect(selectRows(used, recentFirst).map((m) => m.name)).toEqual(['c', 'a', 'b']);
  });
});

describe('toRows', () => {
  test('a model and sample unchanged since the last update keep their row object; a changed one gets a new row', () => {
    const cache: RowCache = new WeakMap();
    const a = model('a');
    const b = model('b');
    const s1 = sample(1);
    const first = toRows([a, b], new Map([['a', s1]]), cache);
    // The next update: b's queue changed (the fold made a new object), a's sample is the same one.
    const b2 = { ...b, queue: { depth: 3, rows: 3, inflight: 1, oldestWaitMs: 1, deadlineMisses: 0 } };
    const second = toRows([a, b2], new Map([['a', s1]]), cache);
    expect(second[0]).toBe(first[0]);
    expect(second[1]).not.toBe(first[1]);
    expect(second[1]!.queueDepth).toBe(3);
    // A new sample for a (same model object) makes a new row with it.
    const third = toRows([a, b2], new Map([['a', sample(7)]]), cache);
    expect(third[0]).not.toBe(second[0]);
    expect(third[0]!.requestsPerSecond).toBe(7);
    expect(third[1]).toBe(second[1]);
    // A sample that goes away is a change too.
    expect(toRows([a, b2], new Map(), cache)[0]!.requestsPerSecond).toBeNull();
  });
});
