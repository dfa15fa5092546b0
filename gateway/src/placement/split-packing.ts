/**
 * Packing that may split a model's measured load over several workers (McNaughton's wrap-around
 * rule, applied in LPT order): every worker is filled up to the fleet's even share T = total / W;
 * a model that does not fit in what is left of a worker takes that room there and the rest on the
 * next worker, so no worker ends above T while the memory caps allow. A whole-replica packing
 * cannot do this when one model alone is more than a worker's even share, or when the shares do
 * not add up to T per worker; here each replica carries a weight (its share of the model's load)
 * and the router sends the model's requests in those proportions.
 *
 * A model with an operator's replica count k (`--replicas`, the console's add and remove) is on
 * exactly k workers, the least loaded, its load water-filled over them: the count is the
 * operator's, kept even where a split would even the fleet out further. A model at the default
 * count takes that many workers water-filled up to T, the rest wrapping on as above. A model moved by an operator stays
 * where it was put, its load split evenly there. Stability: a model stays on a worker that held it
 * before whenever its piece fits there, and a worker that held it wins a split over one with up to
 * `hysteresis` x T more room; the weights themselves follow the measured load on every packing,
 * since changing them moves no weights between devices.
 */
import type { ModelPlacement, PackingInput, PackingResult } from './lpt-packing.js';

/** A model whose load exceeds the room left by less than this fraction of T is not split. */
export const SPLIT_SLACK = 0.01;

/** Shares of `amount` over `workers` that bring them to one level, none above `cap`. */
export function waterFill(
  amount: number,
  workers: readonly string[],
  load: (w: string) => number,
  cap: number,
): Map<string, number> {
  const sorted = [...workers].sort((a, b) => load(a) - load(b));
  let level = cap;
  let left = amount;
  // Raise the level over the i+1 least loaded until it reaches the next one's load (or the cap).
  for (let i = 0; i < sorted.length; i++) {
    const next = i + 1 < sorted.length ? Math.min(load(sorted[i + 1]!), cap) : cap;
    const here = load(sorted[i]!);
    const base = i === 0 ? here : level;
    const need = (next - base) * (i + 1);
    if (need >= left) {
      level = base + left / (i + 1);
      left = 0;
      break;
    }
    left -= Math.max(0, need);
    level = Math.max(base, next);
  }
  const out = new Map<string, number>();
  for (const w of sorted) out.set(w, Math.max(0, level - load(w)));
  return out;
}

export function computeSplitAssignment(input: PackingInput): PackingResult {
  const workers = input.workers;
  const n = workers.length;
  const mem = input.memory ?? new Map<string, number>();
  const forbid = input.forbidMemoryOversubscription ?? true;
  const hysteresis = input.hysteresis ?? 0;
  const cload = new Map<string, number>(workers.map((w) => [w, 0]));
  const mload = new Map<string, number>(workers.map((w) => [w, 0]));
  const placement = new Map<string, ModelPlacement>();
  const held: string[] = [];
  if (n === 0) return { placement, computeLoad: cload, memoryLoad: mload, held };

  const cap = (w: string): number => {
    const c = input.memoryCap?.get(w) ?? 0;
    return c > 0 ? c : Infinity;
  };
  const fits = (w: string, wm: number): boolean => mload.get(w)! + wm <= cap(w);
  const load = (w: string): number => cload.get(w)!;
  const u = (m: string): number => Math.max(0, input.utilisation.get(m) ?? 0);
  let total = 0;
  for (const m of input.utilisation.keys()) total += u(m);
  const T = total / n;
  const eps = T * 1e-9;

  for (const [m, pins] of input.pinned ?? []) {
    const on = pins.filter((w) => cload.has(w));
    if (on.length === 0 || !input.utilisation.has(m)) continue;
    for (const w of on) {
      cload.set(w, load(w) + u(m) / on.length);
      mload.set(w, mload.get(w)! + (mem.get(m) ?? 0));
    }
    placement.set(m, { workers: on, weights: on.map(() => 1 / on.length) });
  }

  const models = [...input.utilisation.keys()].sort(
    (a, b) => u(b) - u(a) || (mem.get(b) ?? 0) - (mem.get(a) ?? 0) || (a < b ? -1 : a > b ? 1 : 0),
  );
  const byName = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

  for (const m of models) {
    if (placement.has(m)) continue;
    const um = u(m);
    const wm = mem.get(m) ?? 0;
    const k = Math.max(1, Math.min(n, input.replicas?.get(m) ?? input.defaultReplicas ?? 1));
    const operatorCount = input.replicas?.has(m) ?? false;
    const prev = new Set(input.previous?.get(m) ?? []);
    let cands = workers.slice();
    if (forbid) {
      const fitting = cands.filter((w) => fits(w, wm));
      if (fitting.length > 0) cands = fitting;
    }
    // A worker that held the model counts as having hysteresis x T more room when ranked.
    const bonus = (w: string): number => (prev.has(w) ? hysteresis * T : 0);
    const byRoom = (a: string, b: string): number => load(a) - bonus(a) - (load(b) - bonus(b)) || byName(a, b);
    const shares = new Map<string, number>();

    if (!(T > 0)) {
      // Nothing measured: k replicas on the least loaded by memory share, previous holders first.
      const memShare = (w: string): number => (cap(w) === Infinity ? 0 : (mload.get(w)! + wm) / cap(w));
      const chosen = [...cands]
        .sort((a, b) => memShare(a) - memShare(b) || Number(prev.has(b)) - Number(prev.has(a)) || byName(a, b))
        .slice(0, k);
      for (const w of chosen) shares.set(w, 0);
    } else {
      let left = um;
      if (k > 1 || operatorCount) {
        const chosen = [...cands].sort(byRoom).slice(0, k);
        // An operator's count is exact: the whole load over those k, however far above T.
        for (const [w, s] of waterFill(um, chosen, load, operatorCount ? Infinity : T)) shares.set(w, s);
        left = operatorCount ? 0 : um - [...shares.values()].reduce((a, b) => a + b, 0);
      }
      while (left > eps) {
        const unused = cands.filter((w) => !shares.has(w));
        if (unused.length === 0) break;
        const whole = unused.filter((w) => T - load(w) >= left - SPLIT_SLACK * T);
        if (whole.length > 0) {
          const keep = whole.find((w) => prev.has(w));
          const best = [...whole].sort((a, b) => load(a) - load(b) || byName(a, b))[0]!;
          if (keep !== undefined && keep !== best && k === 1) held.push(m);
          shares.set(keep ?? best, left);
          left = 0;
          break;
        }
        const w = [...unused].sort(byRoom)[0]!;
        const room = T - load(w);
        // Too little room anywhere for a piece worth a replica: the rest goes over what it holds.
        if (room < SPLIT_SLACK * T) break;
        shares.set(w, room);
        left -= room;
      }
      if (left > eps) {
        const over = shares.size > 0 ? [...shares.keys()] : [[...cands].sort(byRoom)[0]!];
        const base = (w: string): number => load(w) + (shares.get(w) ?? 0);
        for (const [w, s] of waterFill(left, over, base, Infinity)) shares.set(w, (shares.get(w) ?? 0) + s);
      }
    }

    const on = [...shares.keys()];
    for (const w of on) {
      cload.set(w, load(w) + shares.get(w)!);
      mload.set(w, mload.get(w)! + wm);
    }
    const weights = um > 0 ? on.map((w) => shares.get(w)! / um) : on.map(() => 1 / on.length);
    placement.set(m, { workers: on, weights });
  }
  return { placement, computeLoad: cload, memoryLoad: mload, held };
}
