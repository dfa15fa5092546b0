/**
 * Closing the loop on what each worker measured. The packing and the re-weigh predict a worker's
 * load from per-model estimates (a model's load is the fleet's total for it), but equal predicted
 * loads need not give equal device time: a worker starved of CPU, a slower device, a batch size
 * that changes with the share, or estimates that lag the traffic's mix all make one worker's
 * measured time differ from what its shares predicted. Two corrections, each measured per poll
 * window, make the re-weigh charge a share s of model m on worker w as
 * workerFactor(w) x replicaFactor(m, w) x s:
 *
 * - replicaFactor: for a model on two or more live workers, each replica's device time over what
 *   its share of the model's measured total predicted (1 where it cost exactly its share). A
 *   direct measurement: it says which replica is dearer, independent of how the model's total
 *   was estimated. A model on one worker has none: its total already is that worker's time.
 * - workerFactor: an integral controller on the measured spread. Workers joined by split models
 *   form a group (the re-weigh can move load between any two of them); a worker measured above its
 *   group's mean has its factor raised by (measured / mean)^gain, one below has it lowered, and the
 *   group's factors are renormalised to a geometric mean of 1, so they cannot drift together or
 *   wind up where the sets leave nothing to move. It closes what the estimates miss.
 *
 * Damping: each correction goes a quarter of the way (in log terms) to what was measured. On a
 * worker that batches, a replica's cost per request grows with its share (each request is charged
 * its batch's whole execution), so the measured error is about twice what the share change that
 * caused it suggests; a gain of 1/4 per loop keeps the two loops together under 1. A dead band
 * (a worker or replica within it keeps its factor: no chasing noise, no weights flapping) and a
 * clamp keep it from oscillating. A down worker is absent from the window: it keeps its factors
 * and is in no group; the live replicas' shares are renormalised over the live ones, as the
 * router sends them. A replica that took almost nothing in the window is not measured.
 */
import type { ModelPlacement } from './lpt-packing.js';

export interface FeedbackSettings {
  /** How far one window moves a factor toward what it measured: 0 turns the feedback off. */
  readonly gain: number;
  /** A measured error within this fraction leaves a factor alone. */
  readonly deadBand: number;
  /** Factors stay within [1/limit, limit]. */
  readonly limit: number;
  /** A replica whose predicted device time in a period is under this (seconds) is not measured. */
  readonly minComputeSeconds: number;
  /**
   * Fleet device-seconds a correction is measured over before the next: each correction's effect
   * is seen whole before another is made, so measurement lag cannot make it overshoot.
   */
  readonly periodComputeSeconds: number;
}

export const DEFAULT_FEEDBACK: FeedbackSettings = {
  gain: 0.25,
  deadBand: 0.02,
  limit: 4,
  minComputeSeconds: 0.05,
  periodComputeSeconds: 15,
};

/** A replica whose weight is under this is a standby: it takes traffic only on failover. */
export const STANDBY_WEIGHT = 0.01;

/** One poll window: worker -> model -> device-seconds done there (live workers only). */
export type WorkerWindow = ReadonlyMap<string, ReadonlyMap<string, number>>;

/** Device time per unit of predicted share of `model` on `worker`. */
export type CostFactor = (model: string, worker: string) => number;

export class WorkerFeedback {
  private readonly replica = new Map<string, Map<string, number>>();
  private readonly worker = new Map<string, number>();
  private readonly model = new Map<string, number>();
  /** Windows in which some factor moved. */
  steps = 0;

  constructor(private readonly settings: FeedbackSettings) {}

  replicaFactor(model: string, worker: string): number {
    return this.replica.get(model)?.get(worker) ?? 1;
  }

  workerFactor(worker: string): number {
    return this.worker.get(worker) ?? 1;
  }

  /** Every replica factor learnt (model -> worker -> factor). */
  replicaFactors(): ReadonlyMap<string, ReadonlyMap<string, number>> {
    return this.replica;
  }

  workerFactors(): ReadonlyMap<string, number> {
    return this.worker;
  }

  /** The measured correction of a whole model's estimated load (1 until measured otherwise). */
  modelScale(model: string): number {
    return this.model.get(model) ?? 1;
  }

  modelScales(): ReadonlyMap<string, number> {
    return this.model;
  }

  /** The combined factor for the re-weigh, or null while nothing has been learnt. */
  factor(): CostFactor | null {
    if (this.replica.size === 0 && this.worker.size === 0) return null;
    return (m, w) => this.workerFactor(w) * this.replicaFactor(m, w);
  }

  /** Device-seconds per worker, and per replica measured and predicted, since the last step. */
  private period = {
    total: 0,
    worker: new Map<string, number>(),
    measured: new Map<string, Map<string, number>>(),
    predicted: new Map<string, Map<string, number>>(),
    links: [] as string[][],
  };

  /**
   * Folds in one window, measured while `inForce` routed the traffic; once a period's compute has
   * been seen (or `closePeriod`: the measured spread says a correction is due), corrects the
   * factors. Returns whether a factor moved.
   */
  observe(
    window: WorkerWindow,
    inForce: ReadonlyMap<string, ModelPlacement> | null,
    utilisation?: ReadonlyMap<string, number>,
    closePeriod = false,
  ): boolean {
    const s = this.settings;
    if (!(s.gain > 0) || inForce === null) return false;
    const per = this.period;
    const add = (t: Map<string, Map<string, number>>, m: string, w: string, x: number): void => {
      const row = t.get(m) ?? new Map<string, number>();
      row.set(w, (row.get(w) ?? 0) + x);
      t.set(m, row);
    };
    for (const [w, models] of window) {
      const d = [...models.values()].reduce((a, b) => a + b, 0);
      per.worker.set(w, (per.worker.get(w) ?? 0) + d);
      per.total += d;
    }
    for (const [m, p] of inForce) {
      const live = p.workers.map((w, i) => [w, p.weights[i] ?? 0] as const).filter(([w]) => window.has(w));
      if (live.length < 2) continue;
      per.links.push(live.map(([w]) => w));
      const wsum = live.reduce((a, [, x]) => a + x, 0);
      let total = 0;
      for (const [w] of live) total += window.get(w)!.get(m) ?? 0;
      // Device time on workers outside the set (a retry, an unplaced moment) is not this set's.
      if (!(wsum > 0) || !(total > 0)) continue;
      for (const [w, x] of live) {
        add(per.measured, m, w, window.get(w)!.get(m) ?? 0);
        add(per.predicted, m, w, (total * x) / wsum);
      }
    }
    if (per.total < s.periodComputeSeconds && !(closePeriod && per.total > 0)) return false;
    this.period = { total: 0, worker: new Map(), measured: new Map(), predicted: new Map(), links: [] };
    const clamp = (f: number): number => Math.min(s.limit, Math.max(1 / s.limit, f));
    let moved = false;
    for (const [m, row] of per.predicted) {
      for (const [w, predicted] of row) {
        if (predicted < s.minComputeSeconds) continue;
        // Relative to the model's measured total under these shares, the load the re-weigh
        // multiplies the factor by: the shares' mean factor is 1 by construction.
        const target = per.measured.get(m)!.get(w)! / predicted;
        const old = this.replicaFactor(m, w);
        if (Math.abs(target / old - 1) <= s.deadBand) continue;
        const r = this.replica.get(m) ?? new Map<string, number>();
        r.set(w, clamp(old * (target / old) ** s.gain));
        this.replica.set(m, r);
        moved = true;
      }
    }
    // Groups of workers joined by split models over the period (union-find), live throughout.
    const parent = new Map<string, string>();
    const root = (w: string): string => {
      let r = w;
      while (parent.get(r) !== r) r = parent.get(r)!;
      parent.set(w, r);
      return r;
    };
    for (const link of per.links) {
      for (const w of link) if (!parent.has(w)) parent.set(w, w);
      for (const w of link.slice(1)) parent.set(root(w), root(link[0]!));
    }
    const groups = new Map<string, string[]>();
    for (const w of parent.keys()) if (window.has(w)) groups.set(root(w), [...(groups.get(root(w)) ?? []), w]);
    const done = (w: string): number => per.worker.get(w) ?? 0;
    for (const group of groups.values()) {
      if (group.length < 2) continue;
      const mean = group.reduce((a, w) => a + done(w), 0) / group.length;
      if (!(mean > 0)) continue;
      let changed = false;
      for (const w of group) {
        const e = Math.max(done(w) / mean, 1 / s.limit);
        if (Math.abs(e - 1) <= s.deadBand) continue;
        this.worker.set(w, this.workerFactor(w) * e ** s.gain);
        changed = true;
      }
      if (!changed) continue;
      moved = true;
      const g = Math.exp(group.reduce((a, w) => a + Math.log(this.workerFactor(w)), 0) / group.length);
      for (const w of group) this.worker.set(w, clamp(this.workerFactor(w) / g));
    }
    if (utilisation && this.scaleWholeModels(per.worker, inForce, utilisation, parent, window)) moved = true;
    if (moved) this.steps++;
    return moved;
  }

  /**
   * A worker in no group (it holds no split model) cannot shed load by re-weighing; only a repack
   * moves its models, and a repack packs from the estimates. When such a worker's measured share
   * of the period's device time differs from the share the estimates predicted for it, its models'
   * estimates are scaled toward what it measured (exponent 2 x gain: a whole model's routing does
   * not change with the scale, so there is no batching to double the error), so the packing sees
   * the load it actually puts there: two models contending on one worker measure more than each
   * did beside other work.
   */
  private scaleWholeModels(
    measured: ReadonlyMap<string, number>,
    inForce: ReadonlyMap<string, ModelPlacement>,
    u: ReadonlyMap<string, number>,
    grouped: ReadonlyMap<string, string>,
    window: WorkerWindow,
  ): boolean {
    const s = this.settings;
    const live = [...measured.keys()].filter((w) => window.has(w));
    const predicted = new Map(live.map((w) => [w, 0]));
    const onlyOn = new Map<string, string>();
    for (const [m, p] of inForce) {
      const on = p.workers.map((w, i) => [w, p.weights[i] ?? 0] as const).filter(([w]) => predicted.has(w));
      const wsum = on.reduce((a, [, x]) => a + x, 0);
      if (!(wsum > 0)) continue;
      if (on.length === 1) onlyOn.set(m, on[0]![0]);
      const um = (u.get(m) ?? 0) * this.modelScale(m);
      for (const [w, x] of on)
        predicted.set(w, predicted.get(w)! + (um * x * this.workerFactor(w) * this.replicaFactor(m, w)) / wsum);
    }
    const mTotal = live.reduce((a, w) => a + measured.get(w)!, 0);
    const pTotal = [...predicted.values()].reduce((a, b) => a + b, 0);
    if (!(mTotal > 0) || !(pTotal > 0) || live.length < 2) return false;
    let moved = false;
    for (const w of live) {
      if (grouped.has(w) || !(predicted.get(w)! > 0)) continue;
      const ratio = measured.get(w)! / mTotal / (predicted.get(w)! / pTotal);
      if (!(ratio > 0) || Math.abs(ratio - 1) <= s.deadBand) continue;
      for (const [m, on] of onlyOn) {
        if (on !== w) continue;
        const f = Math.min(s.limit, Math.max(1 / s.limit, this.modelScale(m) * ratio ** Math.min(1, 2 * s.gain)));
        this.model.set(m, f);
        moved = true;
      }
    }
    return moved;
  }
}
