/**
 * A simulated fleet in closed loop with the placement controller: each poll window, every model's
 * demand is routed by the placement in force (a down replica's share renormalised over the live
 * ones, as the router does), each worker turns its share into device time at its own speed, and
 * the cumulative counters go to PlacementController.tick exactly as the gateway's poll sends
 * them. It measures what the bench measures: device time per worker per window. Used by the
 * feedback tests and bench/gateway.mjs's larger fleets.
 */
import type { ModelPlacement } from '../placement/lpt-packing.js';
import type { PlacementController } from '../placement/placement-controller.js';
import type { ModelCounters } from '../placement/load-estimator.js';

export interface SimFleet {
  /** Worker name -> device-seconds per unit of load (1 = nominal; 1.5 = half again as slow). */
  readonly speed: ReadonlyMap<string, number>;
  /** Model -> demand in device-seconds per second on a nominal worker. */
  readonly demand: ReadonlyMap<string, number>;
  readonly weightBytes?: ReadonlyMap<string, number>;
  readonly memoryCap?: ReadonlyMap<string, number>;
  /** Workers down (absent from the poll, their replicas skipped) in window `i`. */
  readonly down?: (window: number) => ReadonlySet<string>;
  /** Relative noise on each worker's device time per window (deterministic), e.g. 0.03. */
  readonly noise?: number;
  /**
   * Model -> how much a replica's cost per unit grows with its share s of the model's traffic:
   * device time x (1 + b x s). A worker charges each request of a batch the batch's whole
   * execution, and a replica that takes more of a model's concurrent callers batches more, so
   * its measured cost per request rises with its share (absent: 0, cost independent of share).
   */
  readonly batching?: ReadonlyMap<string, number>;
  /**
   * Relative noise on each model's cost per window, the same on every worker (deterministic): what
   * a run's phases and the machine's contention do to one model's cost against another's. A
   * worker's device time moves with the models it holds, so workers holding different mixes move
   * apart where workers holding the same mix do not.
   */
  readonly modelNoise?: number;
  /**
   * Windows one draw of the per-model noise holds for (absent: 1, a new draw every window): a
   * run's conditions last longer than one poll, so its cost moves are correlated across windows.
   */
  readonly modelNoiseWindows?: number;
}

export interface SimWindow {
  /** Device-seconds per live worker in the window. */
  readonly measured: ReadonlyMap<string, number>;
  /** max / mean over the live workers. */
  readonly spread: number;
  /** The placement that routed the window. */
  readonly placement: ReadonlyMap<string, ModelPlacement>;
}

/** A small deterministic generator (mulberry32), so a noisy run repeats exactly (the fuzz targets' too). */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function simulateFleet(
  ctrl: PlacementController,
  fleet: SimFleet,
  windows: number,
  windowMs = 5000,
  seed = 1,
): SimWindow[] {
  const workers = [...fleet.speed.keys()].sort();
  const models = [...fleet.demand.keys()].sort();
  const caps = fleet.memoryCap ?? new Map<string, number>();
  const rnd = random(seed);
  const cum = new Map(workers.map((w) => [w, new Map(models.map((m) => [m, { requests: 0, computeSeconds: 0 }]))]));
  let placement = ctrl.startup(models, workers, caps).placement;
  const poll = (down: ReadonlySet<string>): Map<string, Map<string, ModelCounters>> =>
    new Map(
      workers
        .filter((w) => !down.has(w))
        .map((w) => [
          w,
          new Map([...cum.get(w)!].map(([m, c]) => [m, { ...c, weightBytes: fleet.weightBytes?.get(m) ?? 0 }])),
        ]),
    );
  ctrl.tick(poll(new Set()), 0, models, workers, caps);
  const out: SimWindow[] = [];
  let modelJitter = new Map<string, number>();
  for (let i = 0; i < windows; i++) {
    const down = fleet.down?.(i) ?? new Set<string>();
    const measured = new Map(workers.filter((w) => !down.has(w)).map((w) => [w, 0]));
    const s = windowMs / 1000;
    const jitter = new Map(workers.map((w) => [w, 1 + (fleet.noise ?? 0) * (2 * rnd() - 1)]));
    // Drawn only when asked for, so a fleet without it sees the same per-worker noise as before.
    if (i % Math.max(1, Math.round(fleet.modelNoiseWindows ?? 1)) === 0)
      modelJitter = new Map(models.map((m) => [m, fleet.modelNoise ? 1 + fleet.modelNoise * (2 * rnd() - 1) : 1]));
    for (const m of models) {
      const p = placement.get(m);
      const on = p ? p.workers.map((w, k) => [w, p.weights[k] ?? 0] as const) : workers.map((w) => [w, 1] as const);
      let live = on.filter(([w]) => !down.has(w));
      let sum = live.reduce((a, [, x]) => a + x, 0);
      // Every live replica at weight 0 (or none live): the router still sends the model somewhere.
      if (!(sum > 0)) {
        live = (live.length > 0 ? live : workers.filter((w) => !down.has(w)).map((w) => [w, 1] as const)).map(
          ([w]) => [w, 1] as const,
        );
        sum = live.length;
      }
      for (const [w, x] of live) {
        const b = 1 + (fleet.batching?.get(m) ?? 0) * (x / sum);
        const dt =
          fleet.demand.get(m)! * modelJitter.get(m)! * (x / sum) * b * fleet.speed.get(w)! * jitter.get(w)! * s;
        const c = cum.get(w)!.get(m)!;
        c.computeSeconds += dt;
        c.requests += Math.round(dt * 1000);
        measured.set(w, measured.get(w)! + dt);
      }
    }
    const loads = [...measured.values()];
    const mean = loads.reduce((a, b) => a + b, 0) / loads.length;
    out.push({ measured, spread: mean > 0 ? Math.max(...loads) / mean : 1, placement });
    const r = ctrl.tick(poll(down), (i + 1) * windowMs, models, workers, caps);
    if (r) placement = r.placement;
  }
  return out;
}
