/**
 * Closing the loop on what each worker measured. The packing and the re-weigh predict a worker's
 * load from per-model estimates (a model's load is the fleet's total for it), but equal shares
 * of a model need not cost the same device time on every replica: a worker starved of CPU, a
 * slower device, or a batch size that changes with the share all make one replica's share cost
 * more than another's. Each poll window this measures, for every model on two or more live
 * workers, each replica's device time over what its share of the model's measured total
 * predicted: a cost factor per (model, worker), 1 where the replica cost exactly its share. The
 * re-weigh charges a share s of the model factor x s on that worker, so the shares level the
 * workers' measured device time, not their predicted shares. A model on one worker needs no
 * factor: its measured total is already that worker's device time.
 *
 * The factor is a measurement, not an accumulated correction, so it cannot wind up where the
 * replica sets leave no way to even the fleet out. It is smoothed (gain < 1: each window moves it
 * part of the way), a window within the dead band of the current factor leaves it alone (no
 * weights flapping on noise), and it is clamped. A down worker is absent from the window: its
 * factors keep their value, and the live replicas' shares are renormalised over the live ones,
 * as the router sends them. A replica that took almost nothing in the window is not measured.
 */
import type { ModelPlacement } from './lpt-packing.js';

export interface FeedbackSettings {
  /** How far one window moves a factor toward what it measured: 0 turns the feedback off. */
  readonly gain: number;
  /** A window within this fraction of the current factor leaves it alone. */
  readonly deadBand: number;
  /** Factors stay within [1/limit, limit]. */
  readonly limit: number;
  /** A replica whose predicted device time in the window is under this (seconds) is not measured. */
  readonly minComputeSeconds: number;
}

export const DEFAULT_FEEDBACK: FeedbackSettings = {
  gain: 0.5,
  deadBand: 0.02,
  limit: 4,
  minComputeSeconds: 0.05,
};

/** One poll window: worker -> model -> device-seconds done there (live workers only). */
export type WorkerWindow = ReadonlyMap<string, ReadonlyMap<string, number>>;

/** Device time per unit of predicted share, per model and worker; absent means 1. */
export type CostFactors = ReadonlyMap<string, ReadonlyMap<string, number>>;

export class WorkerFeedback {
  private readonly cost = new Map<string, Map<string, number>>();
  /** Windows in which some factor moved. */
  steps = 0;

  constructor(private readonly settings: FeedbackSettings) {}

  factorOf(model: string, worker: string): number {
    return this.cost.get(model)?.get(worker) ?? 1;
  }

  /** Every factor learnt, or null while there is none (nothing to correct). */
  factors(): CostFactors | null {
    return this.cost.size > 0 ? this.cost : null;
  }

  /** Forgets the factors of a model (its replica set changed beyond recognition, or it left). */
  forget(model: string): void {
    this.cost.delete(model);
  }

  /**
   * Folds in one window, measured while `inForce` routed the traffic. Returns whether a factor
   * moved.
   */
  observe(window: WorkerWindow, inForce: ReadonlyMap<string, ModelPlacement> | null): boolean {
    const s = this.settings;
    if (!(s.gain > 0) || inForce === null) return false;
    let moved = false;
    for (const [m, p] of inForce) {
      const live = p.workers.map((w, i) => [w, p.weights[i] ?? 0] as const).filter(([w]) => window.has(w));
      if (live.length < 2) continue;
      const wsum = live.reduce((a, [, x]) => a + x, 0);
      let total = 0;
      for (const [w] of live) total += window.get(w)!.get(m) ?? 0;
      // Device time on workers outside the set (a retry, an unplaced moment) is not this set's.
      if (!(wsum > 0) || !(total > 0)) continue;
      for (const [w, x] of live) {
        const predicted = (total * x) / wsum;
        if (predicted < s.minComputeSeconds) continue;
        // Relative to the model's measured total under these shares, which is the load the
        // re-weigh multiplies the factor by: the shares' mean factor is 1 by construction.
        const target = (window.get(w)!.get(m) ?? 0) / predicted;
        const old = this.factorOf(m, w);
        if (Math.abs(target / old - 1) <= s.deadBand) continue;
        const f = Math.min(s.limit, Math.max(1 / s.limit, old * (target / old) ** s.gain));
        const row = this.cost.get(m) ?? new Map<string, number>();
        row.set(w, f);
        this.cost.set(m, row);
        moved = true;
      }
    }
    if (moved) this.steps++;
    return moved;
  }
}
