/**
 * Paying back what a worker did over its group's mean. The worker factors (worker-feedback.ts)
 * learn a lasting bias slowly (a quarter of the way per period of 15 fleet device-seconds), and
 * the estimates follow the traffic's mix over hundreds; neither sees a mix that moves for tens of
 * seconds (one model's cost against another's changes with a run's phases and the machine's
 * load), and a packing gives its workers different mixes, so such a move puts them apart where
 * round_robin's workers, all holding the same mix, move together. What a split model's weights
 * can do instead is level the device time itself: each worker's measured excess over the mean of
 * the workers it is joined to by split models (its debt, in device-seconds) is charged to it in
 * the next re-weigh as extra load, a fraction of it per poll window, so the workers' cumulative
 * device time stays level within a window or two's noise, whatever the mix does.
 *
 * Units: a debt of x device-seconds is x / D of a window's fleet work, where D is the fleet's
 * device time per window (a mean over the last few windows with work, so a run's thin last window
 * does not inflate the next charge); charged as that fraction of the estimated fleet load, times
 * the gain, at most `limit` of a worker's mean load. A debt is held to what that cap can charge,
 * and old debt fades with fleet work done (half-life `halflifeComputeSeconds`), so a debt the
 * weights cannot pay is bounded rather than wound up, and what carries over an idle gap into the
 * next burst of traffic is at most one capped charge. A standby (a replica at weight about 0)
 * joins its worker to the group, since it can take load, but a worker whose split replicas are all
 * standbys cannot shed any: it carries no positive debt, so an excess it cannot pay neither winds
 * up nor pulls the others' charges (the packing, the model scale and the spread trigger are what
 * move its load). Groups only through weighted replicas would trap a worker whose weight reached
 * zero outside its group, where no debt could bring the weight back. An idle fleet keeps its debts.
 */
import type { ModelPlacement } from './lpt-packing.js';
import { STANDBY_WEIGHT, type WorkerWindow } from './worker-feedback.js';

export interface DebtSettings {
  /** The fraction of a worker's debt charged per window: 0 turns the payback off. */
  readonly gain: number;
  /** Fleet device-seconds after which an unpaid debt counts half. */
  readonly halflifeComputeSeconds: number;
  /** A worker's charge is at most this fraction of the fleet's mean load per worker. */
  readonly limit: number;
}

export const DEFAULT_DEBT: DebtSettings = {
  gain: 0.5,
  halflifeComputeSeconds: 30,
  limit: 0.25,
};

/** Extra load (estimate units) the re-weigh charges a worker; absent: none. */
export type DebtCharge = (worker: string) => number;

export class DeviceDebt {
  /** Worker -> device-seconds above its group's mean (sums to zero over each group). */
  private readonly debt = new Map<string, number>();
  /** The fleet's device time per window with work (seconds; a moving mean). */
  private windowSeconds = 0;

  constructor(private readonly settings: DebtSettings) {}

  /** A worker's debt in device-seconds (positive: it did more than its group's mean). */
  of(worker: string): number {
    return this.debt.get(worker) ?? 0;
  }

  debts(): ReadonlyMap<string, number> {
    return this.debt;
  }

  /** Folds in one window measured while `inForce` routed the traffic. */
  observe(window: WorkerWindow, inForce: ReadonlyMap<string, ModelPlacement> | null): void {
    const s = this.settings;
    if (!(s.gain > 0) || inForce === null) return;
    const done = new Map<string, number>();
    let total = 0;
    for (const [w, models] of window) {
      let d = 0;
      for (const x of models.values()) d += x;
      done.set(w, d);
      total += d;
    }
    if (!(total > 0)) return;
    this.windowSeconds = this.windowSeconds > 0 ? this.windowSeconds + (total - this.windowSeconds) / 4 : total;
    const decay = s.halflifeComputeSeconds > 0 ? 2 ** (-total / s.halflifeComputeSeconds) : 0;
    for (const [w, x] of this.debt) this.debt.set(w, x * decay);
    // Groups over the live workers: joined by a model with two or more live replicas.
    const parent = new Map<string, string>([...done.keys()].map((w) => [w, w]));
    const root = (w: string): string => {
      let r = w;
      while (parent.get(r) !== r) r = parent.get(r)!;
      return r;
    };
    // Workers that hold a weighted share of some split model: they can shed load, not only take it.
    const canShed = new Set<string>();
    for (const p of inForce.values()) {
      const live = p.workers.filter((w) => parent.has(w));
      if (live.length >= 2)
        p.workers.forEach((w, i) => {
          if ((p.weights[i] ?? 0) > STANDBY_WEIGHT) canShed.add(w);
        });
      for (const w of live.slice(1)) {
        const [a, b] = [root(w), root(live[0]!)];
        if (a !== b) parent.set(a, b);
      }
    }
    const groups = new Map<string, string[]>();
    for (const w of done.keys()) groups.set(root(w), [...(groups.get(root(w)) ?? []), w]);
    // A worker absent from this window (down, restarted) keeps what it had, fading.
    for (const group of groups.values()) {
      if (group.length < 2) {
        this.debt.delete(group[0]!);
        continue;
      }
      const after = group.map((w) => this.of(w) + done.get(w)!);
      const mean = after.reduce((a, b) => a + b, 0) / group.length;
      // The most a charge can use (the cap, in device-seconds): more would only carry over.
      const most = (s.limit * this.windowSeconds) / (s.gain * done.size);
      // A worker whose split replicas are all standbys cannot pay a debt: it keeps none (else its
      // excess would pull its group's mean, and the others' charges, with nothing to show for it).
      group.forEach((w, i) => this.debt.set(w, Math.max(-most, Math.min(canShed.has(w) ? most : 0, after[i]! - mean))));
    }
  }

  /**
   * What the re-weigh charges each worker for its debt, for a fleet whose estimated load is
   * `utilisation` over `workers`; null while nothing is owed.
   */
  charge(utilisation: ReadonlyMap<string, number>, workers: readonly string[]): DebtCharge | null {
    const s = this.settings;
    if (!(s.gain > 0) || this.debt.size === 0 || !(this.windowSeconds > 0) || workers.length === 0) return null;
    let fleet = 0;
    for (const x of utilisation.values()) fleet += Math.max(0, x);
    if (!(fleet > 0)) return null;
    const cap = (s.limit * fleet) / workers.length;
    return (w) => {
      const c = (s.gain * this.of(w) * fleet) / this.windowSeconds;
      return Math.max(-cap, Math.min(cap, c));
    };
  }
}
