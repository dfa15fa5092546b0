/**
 * When to repack: after a fixed amount of fleet compute (device-seconds), a smaller amount for
 * the first traffic-driven repack, never on an idle fleet. Placement is computed from measured
 * load (LoadEstimator), never from a file the operator maintains; between and at repacks the
 * weights are corrected by what each worker measured against the even share (WorkerFeedback).
 */
import { LoadEstimator, type FleetSample } from './load-estimator.js';
import { computeAssignment, type PackingInput, type PackingResult } from './lpt-packing.js';
import { computeSplitAssignment } from './split-packing.js';
import { reweigh } from './reweigh.js';
import { DEFAULT_FEEDBACK, WorkerFeedback, type FeedbackSettings } from './worker-feedback.js';
import { DEFAULT_DEBT, DeviceDebt, type DebtSettings } from './device-debt.js';
import { DEFAULT_SPREAD_TRIGGER, SpreadTrigger, type SpreadTriggerSettings } from './spread-trigger.js';
import type { OperatorPlacement } from '../control/placement-state.js';

export interface PlacementSettings {
  readonly firstRebalanceComputeSeconds: number;
  readonly rebalanceComputeSeconds: number;
  readonly hysteresis: number;
  readonly defaultReplicas: number;
  readonly replicas: ReadonlyMap<string, number>;
  readonly forbidMemoryOversubscription: boolean;
  /** The per-worker feedback on measured device time (absent: DEFAULT_FEEDBACK). */
  readonly feedback?: FeedbackSettings;
  /** The repack on the measured spread (absent: DEFAULT_SPREAD_TRIGGER). */
  readonly spreadTrigger?: SpreadTriggerSettings;
  /** The payback of each worker's measured excess through split weights (absent: DEFAULT_DEBT). */
  readonly debt?: DebtSettings;
}

export const DEFAULT_PLACEMENT: PlacementSettings = {
  firstRebalanceComputeSeconds: 60,
  rebalanceComputeSeconds: 300,
  hysteresis: 0.1,
  defaultReplicas: 1,
  replicas: new Map(),
  forbidMemoryOversubscription: true,
};

export class PlacementController {
  readonly estimator: LoadEstimator;
  readonly feedback: WorkerFeedback;
  readonly spread: SpreadTrigger;
  readonly debt: DeviceDebt;
  private accumulated = 0;
  private trafficRepacks = 0;
  /** Polls that saw fleet compute. */
  private trafficPolls = 0;
  private previous = new Map<string, readonly string[]>();
  /** Replica counts: the settings', then the operator's changes (console actions). */
  private readonly replicas: Map<string, number>;
  /** Models the operator moved: kept on exactly these workers until released. */
  private readonly pins = new Map<string, readonly string[]>();
  private last: PackingResult | null = null;
  repacks = 0;
  /** Replicas added because the measured spread was over the threshold (join()). */
  joins = 0;
  /** Polls between repacks that re-derived the weights of unchanged replica sets. */
  reweighs = 0;

  constructor(private readonly settings: PlacementSettings) {
    this.estimator = new LoadEstimator(settings.rebalanceComputeSeconds);
    this.feedback = new WorkerFeedback(settings.feedback ?? DEFAULT_FEEDBACK);
    this.spread = new SpreadTrigger(settings.spreadTrigger ?? DEFAULT_SPREAD_TRIGGER);
    this.debt = new DeviceDebt(settings.debt ?? DEFAULT_DEBT);
    this.replicas = new Map(settings.replicas);
  }

  /** Desired replica count of `model` on a fleet of `workers` (Infinity means every worker). */
  desiredReplicas(model: string, workers: number): number {
    const pinned = this.pins.get(model);
    if (pinned) return pinned.length;
    return Math.max(1, Math.min(workers, this.replicas.get(model) ?? this.settings.defaultReplicas));
  }

  setReplicas(model: string, n: number): void {
    this.replicas.set(model, n);
  }

  pinnedOn(model: string): readonly string[] | undefined {
    return this.pins.get(model);
  }

  pin(model: string, workers: readonly string[]): void {
    this.pins.set(model, [...workers]);
  }

  unpin(model: string): boolean {
    return this.pins.delete(model);
  }

  /** What the operator's actions have set for `model`, as the placement state stores it. */
  operatorState(model: string): OperatorPlacement {
    const n = this.replicas.get(model);
    return {
      model,
      replicas: n !== undefined && Number.isFinite(n) ? n : null,
      pinned: this.pins.has(model) ? [...this.pins.get(model)!] : null,
    };
  }

  /**
   * Puts back stored operator placements before the first packing (or after a failed save). A pin
   * keeps only the workers this fleet has; one left with none is dropped.
   */
  restore(states: readonly OperatorPlacement[], workers: readonly string[]): void {
    for (const s of states) {
      if (s.replicas !== null) this.replicas.set(s.model, s.replicas);
      else if (this.settings.replicas.has(s.model)) this.replicas.set(s.model, this.settings.replicas.get(s.model)!);
      else this.replicas.delete(s.model);
      const pinned = (s.pinned ?? []).filter((w) => workers.includes(w));
      if (pinned.length > 0) this.pins.set(s.model, pinned);
      else this.pins.delete(s.model);
    }
  }

  /** The last packing (compute load per worker, placement), or null before the first. */
  lastResult(): PackingResult | null {
    return this.last;
  }

  /**
   * The placement before any traffic is measured: every model assumed equally hot, so models
   * spread evenly by count (with zero for all, every model would tie onto the first worker).
   */
  startup(
    models: readonly string[],
    workers: readonly string[],
    memoryCap: ReadonlyMap<string, number>,
  ): PackingResult {
    return this.pack(new Map(models.map((m) => [m, 1])), workers, memoryCap, false);
  }

  /**
   * Folds in a poll; repacks when enough compute has passed (or `force`), else re-weighs the
   * replicas it has. Returns the new placement, or null when nothing was recomputed.
   */
  tick(
    sample: FleetSample,
    nowMs: number,
    models: readonly string[],
    workers: readonly string[],
    memoryCap: ReadonlyMap<string, number>,
    force = false,
  ): PackingResult | null {
    const done = this.estimator.observe(sample, nowMs);
    // Only weights the controller derived from measured load are corrected: the startup guess's
    // imbalance is the packing's to fix, and a factor learnt from it would wind up.
    // Like the feedback, the spread is judged only under placements made from measured load.
    const uneven = this.trafficRepacks > 0 && this.spread.observe(this.estimator.lastWindow(), workers);
    // A span measured over the threshold closes the feedback's period now: its correction is due.
    if (this.trafficRepacks > 0)
      this.feedback.observe(
        this.estimator.lastWindow(),
        this.last?.placement ?? null,
        this.estimator.utilisation(models),
        uneven,
      );
    if (this.trafficRepacks > 0) this.debt.observe(this.estimator.lastWindow(), this.last?.placement ?? null);
    this.accumulated += done;
    if (done > 0) this.trafficPolls++;
    const threshold =
      this.trafficRepacks === 0 ? this.settings.firstRebalanceComputeSeconds : this.settings.rebalanceComputeSeconds;
    // The first packing from traffic waits for a second measured window: the first one after a
    // cold start holds weight loads and the callers' ramp-up.
    const early = this.trafficRepacks === 0 && this.trafficPolls < 2;
    let result: PackingResult | null;
    if (!force && (this.accumulated < threshold || early)) result = this.reweighed(models, workers);
    else {
      if (!force) this.trafficRepacks++;
      this.accumulated = 0;
      result = this.pack(this.utilisation(models), workers, memoryCap, true, force);
    }
    return (uneven && !force && this.join(models, workers, memoryCap)) || result;
  }

  /**
   * The measured spread is over the threshold and the busiest and idlest workers of the span are
   * in different groups (no split model joins them), so no re-weigh can move work between them.
   * The least change that can: one more replica, on the idlest worker, of the smallest model on
   * the busiest that carries at least the busiest's excess (else the largest there); the re-weigh
   * and the feedback then level the joined group. Only models at the default count that are not
   * pinned, and only where the weights fit the idlest worker's memory. Returns null when no such
   * model exists or the two are already joined.
   */
  private join(
    models: readonly string[],
    workers: readonly string[],
    memoryCap: ReadonlyMap<string, number>,
  ): PackingResult | null {
    const last = this.last;
    const loads = this.spread.lastLoads;
    if (last === null || loads.size < 2) return null;
    const ranked = [...loads].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
    const [hot, hotLoad] = ranked[0]!;
    const [cold] = ranked[ranked.length - 1]!;
    const parent = new Map<string, string>();
    const root = (w: string): string => {
      let r = w;
      while ((parent.get(r) ?? r) !== r) r = parent.get(r)!;
      return r;
    };
    for (const p of last.placement.values())
      for (const w of p.workers.slice(1)) {
        const [a, b] = [root(w), root(p.workers[0]!)];
        if (a !== b) parent.set(a, b);
      }
    if (root(hot) === root(cold)) return null;
    const mean = [...loads.values()].reduce((a, b) => a + b, 0) / loads.size;
    const u = this.utilisation(models);
    // The busiest worker's excess, in the estimates' units (its measured excess scaled by what its
    // estimated load is per measured second).
    const onHot = [...last.placement].filter(([m, p]) => p.workers.includes(hot) && u.has(m));
    const estHot = onHot.reduce((a, [m, p]) => a + (u.get(m) ?? 0) * (p.weights[p.workers.indexOf(hot)] ?? 0), 0);
    const excess = hotLoad > 0 ? ((hotLoad - mean) / hotLoad) * estHot : 0;
    const bytes = this.estimator.weightBytes();
    const capCold = memoryCap.get(cold) ?? 0;
    const held = last.memoryLoad.get(cold) ?? 0;
    const cands = onHot
      .filter(
        ([m, p]) =>
          !this.pins.has(m) &&
          !this.replicas.has(m) &&
          !p.workers.includes(cold) &&
          (capCold <= 0 || !this.settings.forbidMemoryOversubscription || held + (bytes.get(m) ?? 0) <= capCold),
      )
      .map(([m, p]) => ({ m, p, share: (u.get(m) ?? 0) * (p.weights[p.workers.indexOf(hot)] ?? 0) }))
      .filter((c) => c.share > 0)
      .sort((a, b) => a.share - b.share || (a.m < b.m ? -1 : 1));
    if (cands.length === 0) return null;
    const pick = cands.find((c) => c.share >= excess) ?? cands[cands.length - 1]!;
    const previous = new Map(this.previous);
    previous.set(pick.m, [...pick.p.workers, cold]);
    const before = this.previous;
    this.previous = previous;
    const result = this.keptSets(u, workers);
    if (result === null) {
      this.previous = before;
      return null;
    }
    const memoryLoad = new Map(result.memoryLoad);
    memoryLoad.set(cold, held + (bytes.get(pick.m) ?? 0));
    this.last = { ...result, memoryLoad };
    this.joins++;
    // A placement change like a repack's: the console's placement view follows the count.
    this.repacks++;
    this.spread.repacked();
    return this.last;
  }

  /** The estimated load per model, whole models scaled by what their worker measured (feedback). */
  private utilisation(models: readonly string[]): Map<string, number> {
    const u = this.estimator.utilisation(models);
    for (const [m, x] of u) u.set(m, x * this.feedback.modelScale(m));
    return u;
  }

  /**
   * Between repacks, once a placement from measured load exists: the same replica sets with
   * weights that follow the latest estimates (null when a model or worker has come or gone since,
   * which waits for the next repack).
   */
  private reweighed(models: readonly string[], workers: readonly string[]): PackingResult | null {
    if (this.trafficRepacks === 0 || this.last === null) return null;
    const result = this.keptSets(this.utilisation(models), workers);
    if (result === null) return null;
    this.last = result;
    this.reweighs++;
    return result;
  }

  /**
   * The previous replica sets re-weighed for `u`, or null where they no longer apply: a model or
   * worker came or went, or an operator's count or move is not what the set holds.
   */
  private keptSets(u: ReadonlyMap<string, number>, workers: readonly string[]): PackingResult | null {
    if (this.last === null) return null;
    const sets = new Map<string, readonly string[]>();
    // A model the packing left without replicas (no measured load: nothing to place) stays so
    // while it has none; it must not stop the others' re-weigh (it did: with one idle model in
    // the repository the weights moved only at repacks).
    const idle: string[] = [];
    for (const m of u.keys()) {
      const set = this.previous.get(m);
      if (set && set.length === 0 && !((u.get(m) ?? 0) > 0) && !this.pins.has(m)) {
        idle.push(m);
        continue;
      }
      if (!set || set.length === 0 || set.some((w) => !workers.includes(w))) return null;
      const pins = this.pins.get(m);
      if (pins && pins.join('\0') !== set.join('\0')) return null;
      if (!pins && this.replicas.has(m) && set.length !== this.desiredReplicas(m, workers.length)) return null;
      sets.set(m, set);
    }
    const result = reweigh({
      utilisation: new Map([...u].filter(([m]) => sets.has(m))),
      workers: [...workers].sort(),
      sets,
      pinned: new Set(this.pins.keys()),
      memoryLoad: this.last.memoryLoad,
      factor: this.feedback.factor(),
      charge: this.debt.charge(u, workers),
    });
    if (idle.length === 0) return result;
    const placement = new Map(result.placement);
    for (const m of idle) placement.set(m, { workers: [], weights: [] });
    return { ...result, placement };
  }

  private pack(
    u: Map<string, number>,
    workers: readonly string[],
    memoryCap: ReadonlyMap<string, number>,
    split: boolean,
    force = false,
  ): PackingResult {
    const input: PackingInput = {
      utilisation: u,
      workers: [...workers].sort(),
      previous: this.previous,
      memory: this.estimator.weightBytes(),
      memoryCap,
      replicas: this.replicas,
      defaultReplicas: this.settings.defaultReplicas,
      hysteresis: this.settings.hysteresis,
      forbidMemoryOversubscription: this.settings.forbidMemoryOversubscription,
      pinned: this.pins,
    };
    // Measured load may be split over workers (weighted replicas); the guess before any traffic
    // places whole models, since splitting a load nobody has measured balances nothing.
    let result = split ? computeSplitAssignment(input) : computeAssignment(input);
    // The fresh sets' weights corrected by what each worker measured (the packing predicts in
    // estimated load; the factors turn that into each worker's device time).
    const factor = this.feedback.factor();
    const charge = this.debt.charge(u, workers);
    if (split && (factor || charge))
      result = {
        ...reweigh({
          utilisation: u,
          workers: input.workers,
          sets: new Map([...result.placement].map(([m, p]) => [m, p.workers])),
          pinned: new Set(this.pins.keys()),
          memoryLoad: result.memoryLoad,
          factor,
          charge,
        }),
        held: result.held,
      };
    // Hysteresis on replica sets: moving a replica moves weights between devices, changing a
    // weight moves nothing. A traffic repack keeps the replicas it has when, re-weighed, they
    // leave the busiest worker within the hysteresis of what the fresh packing would.
    if (split && !force) {
      const kept = this.keptSets(u, workers);
      const busiest = (r: PackingResult): number => Math.max(0, ...r.computeLoad.values());
      if (kept && busiest(kept) <= busiest(result) * (1 + this.settings.hysteresis)) result = kept;
    }
    this.last = result;
    this.previous = new Map([...result.placement].map(([m, p]) => [m, p.workers]));
    this.repacks++;
    this.spread.repacked();
    return result;
  }
}
