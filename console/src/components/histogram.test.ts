import { describe, expect, test } from 'vitest';
import { batchBars, formatSeconds, latencyBars, quantileBound } from './histogram.js';

const h = (counts: number[], bounds = [0.001, 0.002, 0.004, 0.008]) => ({
  bounds,
  counts,
  sum: 0.01,
  count: counts.reduce((a, b) => a + b, 0),
});

describe('histogram bars and quantiles', () => {
  test('durations read short in the unit that fits', () => {
    expect(formatSeconds(0.0005)).toBe('500 µs');
    expect(formatSeconds(0.004)).toBe('4 ms');
    expect(formatSeconds(0.0123)).toBe('12.3 ms');
    expect(formatSeconds(1.024)).toBe('1.02 s');
  });

  test('bars run from the first to the last bucket with a count; the +Inf bucket is "over"', () => {
    expect(latencyBars(h([0, 3, 0, 1, 0]))).toEqual([
      { label: '≤ 2 ms', count: 3 },
      { label: '≤ 4 ms', count: 0 },
      { label: '≤ 8 ms', count: 1 },
    ]);
    expect(latencyBars(h([0, 0, 0, 0, 2]))).toEqual([{ label: '> 8 ms', count: 2 }]);
    expect(latencyBars(h([0, 0, 0, 0, 0]))).toEqual([]);
    expect(latencyBars(null)).toEqual([]);
  });

  test('a quantile is the bound of the bucket where it falls', () => {
    const x = h([50, 40, 9, 1, 0]);
    expect(quantileBound(x, 0.5)).toBe(0.001);
    expect(quantileBound(x, 0.9)).toBe(0.002);
    expect(quantileBound(x, 0.99)).toBe(0.004);
    expect(quantileBound(x, 1)).toBe(0.008);
    expect(quantileBound(h([0, 0, 0, 0, 5]), 0.5)).toBe(Infinity);
    expect(quantileBound(h([0, 0, 0, 0, 0]), 0.5)).toBeNull();
  });

  test('batch bars list every compiled size, the ones never run at zero', () => {
    expect(batchBars({ '4': 10, '1': 2 }, [1, 4, 8])).toEqual([
      { label: '1', count: 2 },
      { label: '4', count: 10 },
      { label: '8', count: 0 },
    ]);
  });
});
