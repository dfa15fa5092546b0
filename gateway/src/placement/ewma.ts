/**
 * An exponentially weighted mean whose decay is measured in work done, not wall time: `dt` is
 * how much fleet compute (device-seconds) passed since the last sample, `halflife` the amount of
 * compute after which an old estimate counts half. An idle fleet therefore never forgets.
 */
export function ewma(old: number, sample: number, dt: number, halflife: number): number {
  if (!(dt > 0)) return old;
  const alpha = halflife > 0 ? 1 - 2 ** (-dt / halflife) : 1;
  return (1 - alpha) * old + alpha * sample;
}

/**
 * The same mean, bias-corrected: it carries the total weight its samples have had, so until
 * a half-life of compute has passed the estimate is the compute-weighted mean of the samples so
 * far, not the first sample held at full weight (a cold start's first window, with weights
 * still loading, would otherwise stand in for the traffic for a whole half-life).
 */
export interface WeightedMean {
  readonly sum: number;
  readonly weight: number;
}

export function foldMean(m: WeightedMean | null, sample: number, dt: number, halflife: number): WeightedMean {
  const alpha = dt > 0 ? (halflife > 0 ? 1 - 2 ** (-dt / halflife) : 1) : 0;
  if (m === null || m.weight === 0)
    return alpha > 0 ? { sum: alpha * sample, weight: alpha } : { sum: sample, weight: 0 };
  return { sum: (1 - alpha) * m.sum + alpha * sample, weight: (1 - alpha) * m.weight + alpha };
}

export const meanOf = (m: WeightedMean): number => (m.weight > 0 ? m.sum / m.weight : m.sum);
