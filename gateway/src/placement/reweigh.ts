/**
 * New weights for replicas that stay where they are: between repacks the measured load moves on,
 * and a replica's weight (its share of its model's traffic) can follow it at no cost, since no
 * weights move between devices. Given each model's replica set, the shares that make the most
 * loaded worker as light as possible are found by block coordinate descent: each model in turn
 * takes its load off and water-fills it back over its own replicas against everything else, a
 * few passes over the models (each pass never raises the largest load).
 */
import type { ModelPlacement, PackingResult } from './lpt-packing.js';
import { waterFill } from './split-packing.js';

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
}

const PASSES = 8;

export function reweigh(input: ReweighInput): PackingResult {
  const cload = new Map<string, number>(input.workers.map((w) => [w, 0]));
  const shares = new Map<string, Map<string, number>>();
  const u = (m: string): number => Math.max(0, input.utilisation.get(m) ?? 0);
  const models = [...input.utilisation.keys()].sort((a, b) => u(b) - u(a) || (a < b ? -1 : a > b ? 1 : 0));
  const add = (s: ReadonlyMap<string, number>, sign: 1 | -1): void => {
    for (const [w, x] of s) cload.set(w, cload.get(w)! + sign * x);
  };
  // Start from even shares over each set, then improve one model at a time.
  for (const m of models) {
    const set = input.sets.get(m)!;
    const s = new Map(set.map((w) => [w, u(m) / set.length]));
    shares.set(m, s);
    add(s, 1);
  }
  for (let pass = 0; pass < PASSES; pass++) {
    for (const m of models) {
      if (input.pinned?.has(m) || u(m) <= 0) continue;
      const set = input.sets.get(m)!;
      if (set.length < 2) continue;
      add(shares.get(m)!, -1);
      const s = waterFill(u(m), set, (w) => cload.get(w)!, Infinity);
      shares.set(m, s);
      add(s, 1);
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
