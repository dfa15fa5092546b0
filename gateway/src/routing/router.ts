/**
 * Picks the worker for each request. Three modes:
 *   round_robin        rotate over the workers that hold the model
 *   least_outstanding  the worker with the least work in flight (items, across every model)
 *   lpt_packing        the placement computed from measured load (placement/), each model's
 *                      replicas filled by its fill plan; a model not placed yet rotates
 * Every pick returns the whole failover order: the chosen worker first.
 */
import {
  type FillMode,
  type FillPolicy,
  fillQuantum,
  ReplicaRouter,
  type Reservation,
  WorkerLoad,
} from '../placement/fill-plan.js';
import type { ModelPlacement } from '../placement/lpt-packing.js';
import type { RoutingMode } from '@hloserve/common/placement-api';

export type { RoutingMode };
export const ROUTING_MODES: readonly RoutingMode[] = ['round_robin', 'least_outstanding', 'lpt_packing'];

export interface FillSettings {
  readonly mode: FillMode;
  readonly policy: FillPolicy;
  readonly factor: number;
}

const NO_RELEASE = () => {};

export class Router {
  private readonly cursors = new Map<string, number>();
  readonly load = new WorkerLoad();
  private replicas = new Map<string, ReplicaRouter>();

  constructor(
    readonly mode: RoutingMode,
    private readonly fill: FillSettings = { mode: 'run', policy: 'fill_least', factor: 1 },
  ) {}

  /**
   * `discovered` are the workers whose repository index lists the model as ready, sorted.
   * Returns null when no worker holds the model.
   */
  route(model: string, items: number, discovered: readonly string[]): Reservation | null {
    if (this.mode === 'lpt_packing') {
      const rr = this.replicas.get(model);
      if (rr) {
        const live = rr.workers.filter((w) => discovered.includes(w));
        if (live.length > 0) {
          const res = rr.route(
            items,
            items,
            rr.workers.map((w) => live.includes(w)),
          );
          // A placed replica that is down goes last; discovered non-placement holders follow.
          const order = [
            ...res.order.filter((w) => live.includes(w)),
            ...discovered.filter((w) => !rr.workers.includes(w)),
            ...res.order.filter((w) => !live.includes(w)),
          ];
          return { order, release: res.release };
        }
      }
    }
    if (discovered.length === 0) return null;
    if (this.mode === 'least_outstanding') {
      const order = [...discovered].sort(
        (a, b) => this.load.quantised(a) - this.load.quantised(b) || (a < b ? -1 : a > b ? 1 : 0),
      );
      return { order, release: this.charge(order[0]!, items) };
    }
    const c = this.cursors.get(model) ?? 0;
    this.cursors.set(model, (c + 1) % discovered.length);
    const i = c % discovered.length;
    // The list itself when it starts at its first (one holder: every call); a rotated copy otherwise.
    const order = i === 0 ? discovered : [...discovered.slice(i), ...discovered.slice(0, i)];
    if (this.mode !== 'lpt_packing') return { order, release: NO_RELEASE };
    // Unplaced models still charge their worker so fill_least sees cross-model load.
    return { order, release: this.charge(order[0]!, items) };
  }

  /** Charges `items` to worker `w` until the returned release runs; a second release does nothing. */
  private charge(w: string, items: number): () => void {
    this.load.add(w, items);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.load.add(w, -items);
    };
  }

  /**
   * Installs a new placement. A model whose replica set is unchanged keeps its router (and its
   * in-flight counts), taking the new weights; others start fresh. `maxBatch` sizes each model's
   * fill quantum.
   */
  setPlacement(placement: ReadonlyMap<string, ModelPlacement>, maxBatch: ReadonlyMap<string, number>): void {
    const next = new Map<string, ReplicaRouter>();
    for (const [m, p] of placement) {
      const old = this.replicas.get(m);
      const q = fillQuantum(maxBatch.get(m) ?? 0, this.fill.factor);
      if (old && old.workers.join('\0') === p.workers.join('\0')) {
        old.setWeights(p.weights);
        next.set(m, old);
      } else next.set(m, new ReplicaRouter(p.workers, q, this.fill.mode, this.fill.policy, this.load, p.weights));
    }
    this.replicas = next;
  }

  /** Where each placed model's traffic goes: its replicas and the share each receives. */
  placement(): ReadonlyMap<string, ModelPlacement> {
    return new Map([...this.replicas].map(([m, r]) => [m, { workers: r.workers, weights: r.shares() }]));
  }
}
