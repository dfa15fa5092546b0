/**
 * Measured load per model, from the counters every worker already reports (Triton model
 * statistics: requests served and compute time). A model's load is its compute over the wall
 * time (rate x cost per request, device-seconds per second), taken as a ratio of discounted sums:
 * the compute each model did and the wall time the windows took, both decayed by the fleet
 * compute done since (so the estimate moves as fast as work is done, and an idle fleet never
 * forgets). The packing balances what each worker does over time, and a model's share of that is
 * its share of the compute over the horizon: averaging per-window loads instead (weighted by each
 * window's compute) counts a busy phase more than a quiet one, and a model that runs on after the
 * busy ones stop (a long tail at low concurrency) came out lighter than its share of the work.
 * Unlike the reference, which smooths rate and cost apart and multiplies them, the product is
 * taken whole: a cold start's window (few requests, each slow while weights load) and a warm one
 * carry the same load, but averaging their rates and costs apart would multiply two averages into
 * a load neither window had. The first window is the estimate until others come.
 */
import type { WorkerWindow } from './worker-feedback.js';

export interface ModelCounters {
  /** Requests served since the worker started (monotone while it lives). */
  readonly requests: number;
  /** Device time spent on the model since the worker started, seconds. */
  readonly computeSeconds: number;
  /** Weight bytes of the model on that worker. */
  readonly weightBytes: number;
}

/** One poll: worker -> model -> counters. */
export type FleetSample = ReadonlyMap<string, ReadonlyMap<string, ModelCounters>>;

export class LoadEstimator {
  private last: FleetSample | null = null;
  private lastMs = 0;
  /** Discounted device-seconds per model, and the discounted wall seconds they were done in. */
  private readonly compute = new Map<string, number>();
  private wall = 0;
  private readonly memory = new Map<string, number>();
  private window: WorkerWindow = new Map();

  constructor(private readonly halflifeComputeSeconds: number) {}

  /** Folds in one poll; returns the fleet compute (device-seconds) done since the previous one. */
  observe(sample: FleetSample, nowMs: number): number {
    const prev = this.last;
    const wallS = (nowMs - this.lastMs) / 1000;
    this.last = sample;
    this.lastMs = nowMs;
    const perModel = new Map<string, { dReq: number; dCompute: number }>();
    const window = new Map<string, Map<string, number>>();
    let fleetCompute = 0;
    for (const [worker, models] of sample) {
      const before = prev?.get(worker);
      // A worker in both polls, not restarted between them: what it did in this window.
      const own = new Map<string, number>();
      let restarted = false;
      for (const [m, c] of models) {
        this.memory.set(m, Math.max(this.memory.get(m) ?? 0, c.weightBytes));
        const b = before?.get(m);
        if (!b) continue;
        const dReq = c.requests - b.requests;
        const dCompute = c.computeSeconds - b.computeSeconds;
        // A worker that restarted counts from zero again: re-baseline, never a negative sample.
        if (dReq < 0 || dCompute < 0) {
          restarted = true;
          continue;
        }
        own.set(m, dCompute);
        const acc = perModel.get(m) ?? { dReq: 0, dCompute: 0 };
        acc.dReq += dReq;
        acc.dCompute += dCompute;
        perModel.set(m, acc);
        fleetCompute += dCompute;
      }
      if (before && !restarted) window.set(worker, own);
    }
    this.window = window;
    if (prev === null || !(wallS > 0)) return 0;
    const decay = this.halflifeComputeSeconds > 0 ? 2 ** (-fleetCompute / this.halflifeComputeSeconds) : 0;
    // An idle window (no compute) changes nothing: its wall time is no one's load.
    if (!(fleetCompute > 0)) return 0;
    for (const [m, x] of this.compute) this.compute.set(m, x * decay);
    for (const [m, d] of perModel) this.compute.set(m, (this.compute.get(m) ?? 0) + d.dCompute);
    this.wall = this.wall * decay + wallS;
    return fleetCompute;
  }

  /** u = rate x cost per model (device-seconds per second); 0 until measured. */
  utilisation(models: Iterable<string>): Map<string, number> {
    const out = new Map<string, number>();
    for (const m of models) {
      const u = this.wall > 0 ? (this.compute.get(m) ?? 0) / this.wall : 0;
      out.set(m, u > 0 ? u : 0);
    }
    return out;
  }

  /** Device-seconds per worker and model in the last window, for the workers live throughout it. */
  lastWindow(): WorkerWindow {
    return this.window;
  }

  weightBytes(): ReadonlyMap<string, number> {
    return this.memory;
  }
}
