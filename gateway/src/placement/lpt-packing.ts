/**
 * Longest-processing-time-first packing of models onto workers: each model carries a utilisation
 * u (arrival rate x measured cost per request, in device-seconds per second) and a weight
 * footprint; models are placed heaviest first on the worker whose load after placement is
 * smallest, where load is the larger of compute share and memory share. Hysteresis keeps a model
 * where it was unless moving it improves its worker's score by more than the given fraction, so
 * small changes in measured traffic do not shuffle weights around the fleet.
 */

export interface PackingInput {
  /** Utilisation per model (rate x cost); models absent here are not placed. */
  readonly utilisation: ReadonlyMap<string, number>;
  /** Worker names; ties go to the earlier one, so callers pass them sorted. */
  readonly workers: readonly string[];
  /** Previous placement per model (worker names), for hysteresis and replica stickiness. */
  readonly previous?: ReadonlyMap<string, readonly string[]>;
  /** Weight bytes per model (0 when unknown). */
  readonly memory?: ReadonlyMap<string, number>;
  /** Weight-cache capacity per worker in bytes; absent or <= 0 means unconstrained. */
  readonly memoryCap?: ReadonlyMap<string, number>;
  /** Replica count per model; a value >= workers.length (or Infinity) means every worker. */
  readonly replicas?: ReadonlyMap<string, number>;
  readonly defaultReplicas?: number;
  /** In [0, 1): how much better another worker must score before a single-replica model moves. */
  readonly hysteresis?: number;
  /** Keep a model off workers whose memory it would overflow while some worker still has room. */
  readonly forbidMemoryOversubscription?: boolean;
  /**
   * Models an operator placed by hand (a move from the console): they stay on exactly these
   * workers, and their load and memory are charged there before the others are packed around them.
   */
  readonly pinned?: ReadonlyMap<string, readonly string[]>;
}

export interface ModelPlacement {
  readonly workers: readonly string[];
  /** Share of the model's traffic each worker takes (same order as workers). */
  readonly weights: readonly number[];
}

export interface PackingResult {
  readonly placement: ReadonlyMap<string, ModelPlacement>;
  /** Compute load (sum of u shares) per worker after packing. */
  readonly computeLoad: ReadonlyMap<string, number>;
  /** Bytes assigned per worker after packing. */
  readonly memoryLoad: ReadonlyMap<string, number>;
  /** Single-replica models that stayed on their previous worker only because of hysteresis. */
  readonly held: readonly string[];
}

export function computeAssignment(input: PackingInput): PackingResult {
  const workers = input.workers;
  const n = workers.length;
  const mem = input.memory ?? new Map<string, number>();
  const forbid = input.forbidMemoryOversubscription ?? true;
  const hysteresis = input.hysteresis ?? 0;
  const cload = new Map<string, number>(workers.map((w) => [w, 0]));
  const mload = new Map<string, number>(workers.map((w) => [w, 0]));
  const cap = (w: string): number => {
    const c = input.memoryCap?.get(w) ?? 0;
    return c > 0 ? c : Infinity;
  };
  const score = (w: string, uc: number, wm: number): number => {
    const c = cap(w);
    const memShare = c === Infinity ? 0 : (mload.get(w)! + wm) / c;
    return Math.max(cload.get(w)! + uc, memShare);
  };
  const fits = (w: string, wm: number): boolean => mload.get(w)! + wm <= cap(w);

  const models = [...input.utilisation.keys()].sort((a, b) => {
    const du = input.utilisation.get(b)! - input.utilisation.get(a)!;
    if (du !== 0) return du;
    const dm = (mem.get(b) ?? 0) - (mem.get(a) ?? 0);
    if (dm !== 0) return dm;
    return a < b ? -1 : a > b ? 1 : 0;
  });

  const placement = new Map<string, ModelPlacement>();
  const held: string[] = [];
  if (n === 0) return { placement, computeLoad: cload, memoryLoad: mload, held };

  for (const [m, pins] of input.pinned ?? []) {
    const on = pins.filter((w) => cload.has(w));
    if (on.length === 0 || !input.utilisation.has(m)) continue;
    const share = input.utilisation.get(m)! / on.length;
    for (const w of on) {
      cload.set(w, cload.get(w)! + share);
      mload.set(w, mload.get(w)! + (mem.get(m) ?? 0));
    }
    placement.set(m, { workers: on, weights: on.map(() => 1 / on.length) });
  }

  for (const m of models) {
    if (placement.has(m)) continue;
    const u = input.utilisation.get(m)!;
    const wm = mem.get(m) ?? 0;
    const k = Math.max(1, Math.min(n, input.replicas?.get(m) ?? input.defaultReplicas ?? 1));
    const prev = input.previous?.get(m) ?? [];
    if (k === 1) {
      let cands = workers.slice();
      if (forbid) {
        const fitting = cands.filter((w) => fits(w, wm));
        if (fitting.length > 0) cands = fitting;
      }
      let best = cands[0]!;
      for (const w of cands) if (score(w, u, wm) < score(best, u, wm)) best = w;
      let chosen = best;
      const wp = prev.length === 1 ? prev[0]! : undefined;
      if (wp !== undefined && wp !== best && cands.includes(wp)) {
        if (score(wp, u, wm) <= score(best, u, wm) * (1 + hysteresis)) {
          chosen = wp;
          held.push(m);
        }
      }
      cload.set(chosen, cload.get(chosen)! + u);
      mload.set(chosen, mload.get(chosen)! + wm);
      placement.set(m, { workers: [chosen], weights: [1] });
    } else {
      const share = u / k;
      const ranked = workers
        .map((w) => ({
          w,
          overflow: forbid && !fits(w, wm) ? 1 : 0,
          s: score(w, share, wm),
          fresh: prev.includes(w) ? 0 : 1,
        }))
        .sort((a, b) => a.overflow - b.overflow || a.s - b.s || a.fresh - b.fresh || (a.w < b.w ? -1 : 1));
      const chosen = ranked.slice(0, k).map((r) => r.w);
      for (const w of chosen) {
        cload.set(w, cload.get(w)! + share);
        mload.set(w, mload.get(w)! + wm);
      }
      placement.set(m, { workers: chosen, weights: chosen.map(() => 1 / k) });
    }
  }
  return { placement, computeLoad: cload, memoryLoad: mload, held };
}
