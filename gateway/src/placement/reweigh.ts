/**
 * New weights for replicas that stay where they are: between repacks the measured load moves on,
 * and a replica's weight (its share of its model's traffic) can follow it at no cost, since no
 * weights move between devices. Given each model's replica set, the shares that make the most
 * loaded worker as light as possible are found by block coordinate descent: each model in turn
 * takes its load off and water-fills it back over its own replicas against everything else, a
 * few passes over the models (each pass never raises the largest load). With per-worker factors
 * (worker-feedback.ts) a share s of a model costs its factor there x s: the shares level the
 * workers' measured device time, not their predicted shares.
 */
import type { ModelPlacement, PackingResult } from './lpt-packing.js';
import { waterFill } from './split-packing.js';
import type { CostFactor } from './worker-feedback.js';
import type { DebtCharge } from './device-debt.js';

export interface ReweighInput {
  /** Utilisation per model (rate x cost). */
  readonly utilisation: ReadonlyMap<string, number>;
  readonly workers: readonly string[];
  /** The replica sets to keep; every model of `utilisation` must have one, on `workers`. */
  readonly sets: ReadonlyMap<string, readonly string[]>;
  /** Models an operator moved: their load split evenly over their set, never re-weighed. */
  readonly pinned?: ReadonlySet<string>;
  /** Bytes per worker, carried through (the sets do not change). */
  readonly memoryLoad: ReadonlyMap<string, number>;
  /** Device time per unit of predicted share of a model on a worker (worker-feedback.ts; absent: 1). */
  readonly factor?: CostFactor | null;
  /**
   * Extra load charged to a worker while the shares are levelled, not counted in its compute load
   * (device-debt.ts: a worker that did more than its group's mean is given less; absent: none).
   */
  readonly charge?: DebtCharge | null;
}

/**
 * Shares of `amount` over `workers` that bring base(w) + factor(w) x share(w) to one level (the
 * water-fill with a slope per worker), found by bisection on the level.
 */
export function scaledWaterFill(
  amount: number,
  workers: readonly string[],
  base: (w: string) => number,
  factor: (w: string) => number,
): Map<string, number> {
  const f = (w: string): number => Math.max(1e-9, factor(w));
  const poured = (level: number): number => workers.reduce((a, w) => a + Math.max(0, level - base(w)) / f(w), 0);
  let lo = Math.min(...workers.map(base));
  let hi = Math.max(...workers.map(base)) + amount * Math.max(...workers.map(f));
  for (let i = 0; i < 64 && hi - lo > 1e-12 * Math.max(1, hi); i++) {
    const mid = (lo + hi) / 2;
    if (poured(mid) < amount) lo = mid;
    else hi = mid;
  }
  const raw = new Map(workers.map((w) => [w, Math.max(0, hi - base(w)) / f(w)]));
  // Exact total: bisection leaves the level a hair high.
  const sum = [...raw.values()].reduce((a, b) => a + b, 0);
  return new Map([...raw].map(([w, x]) => [w, sum > 0 ? (x * amount) / sum : amount / workers.length]));
}

const PASSES = 8;

export function reweigh(input: ReweighInput): PackingResult {
  const cload = new Map<string, number>(input.workers.map((w) => [w, 0]));
  const fac = (m: string, w: string): number => input.factor?.(m, w) ?? 1;
  const charged = (w: string): number => input.charge?.(w) ?? 0;
  const shares = new Map<string, Map<string, number>>();
  const u = (m: string): number => Math.max(0, input.utilisation.get(m) ?? 0);
  const models = [...input.utilisation.keys()].sort((a, b) => u(b) - u(a) || (a < b ? -1 : a > b ? 1 : 0));
  const add = (m: string, s: ReadonlyMap<string, number>, sign: 1 | -1): void => {
    for (const [w, x] of s) cload.set(w, cload.get(w)! + sign * fac(m, w) * x);
  };
  // Start from even shares over each set, then improve one model at a time.
  for (const m of models) {
    const set = input.sets.get(m)!;
    const s = new Map(set.map((w) => [w, u(m) / set.length]));
    shares.set(m, s);
    add(m, s, 1);
  }
  for (let pass = 0; pass < PASSES; pass++) {
    for (const m of models) {
      if (input.pinned?.has(m) || u(m) <= 0) continue;
      const set = input.sets.get(m)!;
      if (set.length < 2) continue;
      add(m, shares.get(m)!, -1);
      const s = input.factor
        ? scaledWaterFill(
            u(m),
            set,
            (w) => cload.get(w)! + charged(w),
            (w) => fac(m, w),
          )
        : waterFill(u(m), set, (w) => cload.get(w)! + charged(w), Infinity);
      shares.set(m, s);
      add(m, s, 1);
    }
  }
  const placement = new Map<string, ModelPlacement>();
  for (const m of models) {
    const set = input.sets.get(m)!;
    const s = shares.get(m)!;
    const weights = u(m) > 0 ? set.map((w) => (s.get(w) ?? 0) / u(m)) : set.map(() => 1 / set.length);
    placement.set(m, { workers: set, weights });
  }
  return { placement, computeLoad: cload, memoryLoad: input.memoryLoad, held: [] };
}
