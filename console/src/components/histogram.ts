/** Histogram answers of the control API as bars a person reads, and quantiles read off them. */
import type { HistogramView } from '../api/types.js';

export interface Bar {
  readonly label: string;
  readonly count: number;
}

/** A duration in seconds, short: 500 µs, 4 ms, 1.02 s. */
export function formatSeconds(s: number): string {
  if (s < 1e-3) return `${Math.round(s * 1e6)} µs`;
  if (s < 1) return `${+(s * 1e3).toPrecision(3)} ms`;
  return `${+s.toPrecision(3)} s`;
}

/**
 * One bar per bucket, from the first bucket with a count to the last one (an empty histogram
 * gives none). Labels name the upper bound ("≤ 4 ms"); the last bucket is "> <largest bound>".
 */
export function latencyBars(h: HistogramView | null): Bar[] {
  if (!h || h.count === 0) return [];
  const bars = h.counts.map((count, i) => ({
    label:
      i < h.bounds.length ? `≤ ${formatSeconds(h.bounds[i]!)}` : `> ${formatSeconds(h.bounds[h.bounds.length - 1]!)}`,
    count,
  }));
  const first = bars.findIndex((b) => b.count > 0);
  let last = bars.length - 1;
  while (last > first && bars[last]!.count === 0) last--;
  return bars.slice(first, last + 1);
}

/**
 * The q-quantile's bucket bound: the smallest upper bound under which at least q of the
 * observations fall (Infinity when that is the +Inf bucket; null for no observations). Buckets
 * cannot say more than that, so the console shows it as "at most".
 */
export function quantileBound(h: HistogramView | null, q: number): number | null {
  if (!h || h.count === 0) return null;
  const target = q * h.count;
  let seen = 0;
  for (let i = 0; i < h.counts.length; i++) {
    seen += h.counts[i]!;
    if (seen >= target && seen > 0) return i < h.bounds.length ? h.bounds[i]! : Infinity;
  }
  return Infinity;
}

/** Executions per compiled batch size, ascending, including sizes that never ran. */
export function batchBars(perSize: Readonly<Record<string, number>>, compiled: readonly number[]): Bar[] {
  const sizes = new Set([...compiled, ...Object.keys(perSize).map(Number)]);
  return [...sizes].sort((a, b) => a - b).map((size) => ({ label: String(size), count: perSize[String(size)] ?? 0 }));
}
