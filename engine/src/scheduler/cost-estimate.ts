/**
 * Learned cost of one device execution per compiled batch size. The scheduler uses it for fair
 * priorities, EDF shedding margins and the cost-aware choice among compiled sizes.
 */

/** Seconds assumed for a (model, batch size) never measured, as in the reference. */
export const DEFAULT_COST_SECONDS = 0.01;

/** One EMA step; the first sample seeds the estimate so a cold model is not stuck at the default. */
export function updateCostEma(previous: number | undefined, sampleSeconds: number, alpha: number): number {
  return previous === undefined ? sampleSeconds : alpha * sampleSeconds + (1 - alpha) * previous;
}

export class CostTable {
  readonly #alpha: number;
  readonly #fallback: number;
  readonly #byBatch = new Map<number, number>();
  #snapshot: Readonly<Record<number, number>> | null = null;

  constructor(alpha: number, fallbackSeconds = DEFAULT_COST_SECONDS) {
    this.#alpha = alpha;
    this.#fallback = fallbackSeconds;
  }

  /** Estimated seconds for one execution at `batchSize`, the fallback when never measured. */
  estimate(batchSize: number): number {
    return this.#byBatch.get(batchSize) ?? this.#fallback;
  }

  /** The measured estimate, or undefined: callers that must not guess (size choice) ask this. */
  measured(batchSize: number): number | undefined {
    return this.#byBatch.get(batchSize);
  }

  observe(batchSize: number, seconds: number): void {
    this.#byBatch.set(batchSize, updateCostEma(this.#byBatch.get(batchSize), seconds, this.#alpha));
    this.#snapshot = null;
  }

  /** Replaces the estimate outright (warmup probes, or costs restored from persisted state). */
  seed(batchSize: number, seconds: number): void {
    this.#byBatch.set(batchSize, seconds);
    this.#snapshot = null;
  }

  /**
   * By batch size, ascending (an object's integer keys enumerate in that order). One frozen object
   * until the next change: every model's view asks for it each time the console's feed samples.
   */
  snapshot(): Readonly<Record<number, number>> {
    this.#snapshot ??= Object.freeze(Object.fromEntries(this.#byBatch));
    return this.#snapshot;
  }
}
