/**
 * The fair discipline's memory of recent device time: an exponentially decayed sum of compute
 * seconds per model. A halflife (not a window) means old usage fades smoothly, so a model that
 * was busy a minute ago is not punished forever and no ring buffer of samples is needed.
 */

/** The multiplier that ages a decayed sum by `dtSeconds`; 1 for dt <= 0 (time never runs back). */
export function decayFactor(dtSeconds: number, halflifeSeconds: number): number {
  if (!(dtSeconds > 0)) return 1;
  if (!(halflifeSeconds > 0)) return 0;
  return Math.exp((-dtSeconds * Math.LN2) / halflifeSeconds);
}

/** `value` as measured at `lastSeconds`, aged to `nowSeconds`. */
export function decayEma(value: number, lastSeconds: number, nowSeconds: number, halflifeSeconds: number): number {
  return value * decayFactor(nowSeconds - lastSeconds, halflifeSeconds);
}

/**
 * Per-model decayed sums plus their total, all aged lazily. Because every entry decays by the same
 * factor, the total can be aged in O(1) instead of touching every model on every dispatch (the
 * reference decayed all models each time: weakness 13). Entries are keyed by whatever stands for
 * a model (the scheduler uses its per-model state, so a rename keeps the history).
 */
export class RecencyLedger<K = string> {
  readonly #halflife: number;
  readonly #entries = new Map<K, { value: number; at: number }>();
  #total = 0;
  #totalAt = 0;

  constructor(halflifeSeconds: number) {
    this.#halflife = halflifeSeconds;
  }

  get halflifeSeconds(): number {
    return this.#halflife;
  }

  add(model: K, amount: number, nowSeconds: number): void {
    const e = this.#entries.get(model);
    const before = e === undefined ? 0 : decayEma(e.value, e.at, nowSeconds, this.#halflife);
    // Corrections (actual minus estimate) may be negative; a usage sum never is.
    const after = Math.max(0, before + amount);
    this.#entries.set(model, { value: after, at: nowSeconds });
    this.#total = Math.max(0, this.#agedTotal(nowSeconds) + (after - before));
    this.#totalAt = nowSeconds;
  }

  value(model: K, nowSeconds: number): number {
    const e = this.#entries.get(model);
    return e === undefined ? 0 : decayEma(e.value, e.at, nowSeconds, this.#halflife);
  }

  total(nowSeconds: number): number {
    return this.#agedTotal(nowSeconds);
  }

  remove(model: K, nowSeconds: number): void {
    const v = this.value(model, nowSeconds);
    this.#entries.delete(model);
    this.#total = Math.max(0, this.#agedTotal(nowSeconds) - v);
    this.#totalAt = nowSeconds;
    // Floating residue must not leave a phantom total once nothing is tracked.
    if (this.#entries.size === 0) this.#total = 0;
  }

  #agedTotal(nowSeconds: number): number {
    return decayEma(this.#total, this.#totalAt, nowSeconds, this.#halflife);
  }
}
