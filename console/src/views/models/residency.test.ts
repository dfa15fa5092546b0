import { describe, expect, test } from 'vitest';
import type { EventRecord, MetricSample } from '../../api/types.js';
import { placeOn, residencyMarks, residencySpans, untilNow } from './residency.js';

const s = (at: number, residentBytes: number): MetricSample => ({
  at,
  requestsPerSecond: 0,
  p50Ms: null,
  p99Ms: null,
  queueDepth: 0,
  residentBytes,
  loads: 0,
  evictions: 0,
});
const e = (seq: number, at: number, kind: string, model: string, data: Record<string, unknown> = {}): EventRecord => ({
  seq,
  at,
  kind,
  model,
  data,
});

describe('the residency timeline', () => {
  test('samples with the same state merge into spans; a state change starts a new one', () => {
    const spans = residencySpans([s(0, 0), s(1000, 100), s(2000, 100), s(3000, 0), s(4000, 0)]);
    expect(spans).toEqual([
      { from: 0, to: 1000, onDevice: false, bytes: 0 },
      { from: 1000, to: 3000, onDevice: true, bytes: 100 },
      { from: 3000, to: 4000, onDevice: false, bytes: 0 },
    ]);
  });

  test('a gap in the history (the engine was down) ends a span where the samples stop', () => {
    const spans = residencySpans([s(0, 100), s(1000, 100), s(60_000, 100)], 5_000);
    expect(spans).toEqual([
      { from: 0, to: 1000, onDevice: true, bytes: 100 },
      { from: 60_000, to: 60_000, onDevice: true, bytes: 100 },
    ]);
  });

  test("marks are this model's loads, evictions with their reason, pins; oldest first", () => {
    const marks = residencyMarks(
      [
        e(4, 400, 'model.evicted', 'a', { reason: 'budget', bytes: 10 }),
        e(3, 300, 'model.residency-changed', 'a', { residency: 'device' }),
        e(2, 200, 'model.loaded', 'a', { generation: 2 }),
        e(5, 500, 'model.evicted', 'b', { reason: 'lru' }),
        e(6, 600, 'upload.progress', 'a', {}),
        e(8, 650, 'upload.installed', 'a', { upload: 'u1' }),
        e(9, 660, 'model.loading', 'a', { reason: 'reload' }),
        e(7, 700, 'model.failed', 'a', { error: 'bad module' }),
      ],
      'a',
    );
    expect(marks).toEqual([
      { at: 200, seq: 2, kind: 'load', text: 'loaded' },
      { at: 300, seq: 3, kind: 'pin', text: 'residency-changed (device)' },
      { at: 400, seq: 4, kind: 'evict', text: 'evicted (budget)' },
      { at: 650, seq: 8, kind: 'other', text: 'installed by an upload' },
      { at: 700, seq: 7, kind: 'fail', text: 'failed (bad module)' },
    ]);
  });

  test('instants are placed on the window as a clamped percentage', () => {
    expect(placeOn(50, 0, 200)).toBe(25);
    expect(placeOn(-10, 0, 200)).toBe(0);
    expect(placeOn(999, 0, 200)).toBe(100);
  });
});

describe('the lane carried on to now', () => {
  const load = { at: 500, seq: 1, kind: 'load' as const, text: 'loaded' };
  test('a last span on the device runs on to now while the engine says it is still there', () => {
    const spans = residencySpans([s(0, 0), s(1000, 100)]);
    expect(untilNow(spans, [], true, 9000).at(-1)).toEqual({ from: 1000, to: 9000, onDevice: true, bytes: 100 });
    expect(untilNow(spans, [], false, 9000)).toEqual(spans);
  });

  test('loaded since the last sample (or with no history yet): on the device from the load', () => {
    expect(untilNow([], [load], true, 2000)).toEqual([{ from: 500, to: 2000, onDevice: true, bytes: 0 }]);
    const off = residencySpans([s(0, 0), s(1000, 0)]);
    expect(untilNow(off, [load], true, 2000).at(-1)).toEqual({ from: 1000, to: 2000, onDevice: true, bytes: 0 });
    expect(untilNow([], [], true, 2000)).toEqual([]);
  });
});
