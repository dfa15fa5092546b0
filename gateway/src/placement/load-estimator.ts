/**
 * Measured load per model, from the counters every worker already reports (Triton model
 * statistics: requests served and compute time). Per poll window a model's load is its compute
 * over the wall time (rate x cost per request, device-seconds per second); the windows are
 * smoothed by a mean whose decay runs on fleet compute, so the estimate moves as fast as work is
 * done. Unlike the reference, which smooths rate and cost apart and multiplies them, the product
 * is smoothed: a cold start's window (few requests, each slow while weights load) and a warm one
 * carry the same load, but averaging their rates and costs apart would multiply two averages into
 * a load neither window had. The mean is bias-corrected (foldMean): the first window is the
 * estimate until others come, then windows are averaged by the compute each saw.
 */
import { foldMean, meanOf, type WeightedMean } from './ewma.js';
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

interface ModelEstimate {
  /** Device-seconds per second. */
  load: WeightedMean | null;
}

export class LoadEstimator {
  private last: FleetSample | null = null;
  private lastMs = 0;
  private readonly models = new Map<string, ModelEstimate>();
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
    for (const [m, d] of perModel) {
      const e = this.models.get(m) ?? { load: null };
      e.load = foldMean(e.load, d.dCompute / wallS, fleetCompute, this.halflifeComputeSeconds);
      this.models.set(m, e);
    }
    return fleetCompute;
  }

  /** u = rate x cost per model (device-seconds per second); 0 until measured. */
  utilisation(models: Iterable<string>): Map<string, number> {
    const out = new Map<string, number>();
    for (const m of models) {
      const e = this.models.get(m);
      const u = e?.load ? meanOf(e.load) : 0;
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
