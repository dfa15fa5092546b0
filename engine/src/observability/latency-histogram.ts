/**
 * A model's request latency distribution: fixed buckets, 16 per doubling of the microseconds
 * (each 1/16 of its doubling's start wide: 3-6 % of the value), from 1 µs to 2^28 µs (4.5
 * minutes; longer lands in the last bucket). The bucket is read from the float's own exponent and
 * top four mantissa bits, so adding a sample is a store, a load, two shifts and an increment, no
 * Math.log2 (about 16 ns a sample on the 2-vCPU VM; bench/latency-histogram.mjs). The control
 * API's metric history reads the counts once a second and takes percentiles of what arrived since.
 */
import { endianness } from 'node:os';

const PER_DOUBLING = 16;
const DOUBLINGS = 28;
export const LATENCY_BUCKETS = PER_DOUBLING * DOUBLINGS;

/** What a reader of the distribution sees. */
export interface LatencyCounts {
  /** Cumulative samples per bucket since the model's slot was made. */
  readonly counts: Uint32Array;
  /** Their sum: a reader tells that nothing arrived without walking the buckets. */
  readonly total: number;
}

const f64 = new Float64Array(1);
const u32 = new Uint32Array(f64.buffer);
/** The word holding the sign, the exponent and the mantissa's top bits. */
const HI = endianness() === 'LE' ? 1 : 0;

export class LatencyHistogram implements LatencyCounts {
  readonly counts = new Uint32Array(LATENCY_BUCKETS);
  total = 0;

  add(seconds: number): void {
    const us = seconds * 1e6;
    let i = 0; // below 1 µs, and NaN
    if (us >= 1) {
      f64[0] = us;
      const hi = u32[HI]!;
      // (exponent - bias) doublings above 1 µs, then the top four mantissa bits.
      i = (((hi >>> 20) - 1023) << 4) | ((hi >>> 16) & 15);
      if (i >= LATENCY_BUCKETS) i = LATENCY_BUCKETS - 1;
    }
    this.counts[i]!++;
    this.total++;
  }
}

/** The middle of bucket `i`, milliseconds. */
export function bucketMs(i: number): number {
  const doubling = Math.floor(i / PER_DOUBLING);
  const step = i % PER_DOUBLING;
  return (2 ** doubling * (1 + (step + 0.5) / PER_DOUBLING)) / 1000;
}

/**
 * Percentiles (q in (0, 1]) of the samples in `delta` (per-bucket counts), in milliseconds; null
 * when it holds no samples.
 */
export function percentilesMs(delta: ArrayLike<number>, qs: readonly number[]): (number | null)[] {
  let total = 0;
  for (let i = 0; i < delta.length; i++) total += delta[i]!;
  if (total === 0) return qs.map(() => null);
  return qs.map((q) => {
    const rank = Math.max(1, Math.ceil(q * total));
    let seen = 0;
    for (let i = 0; i < delta.length; i++) {
      seen += delta[i]!;
      if (seen >= rank) return bucketMs(i);
    }
    return bucketMs(delta.length - 1);
  });
}
