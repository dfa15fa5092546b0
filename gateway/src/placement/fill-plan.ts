/**
 * Fill plans: how the requests of one model spread over its replicas. The unit is the item (rows
 * of the batch axis), and Q, the fill quantum, is how many items one replica should receive in a
 * row before the next takes over; a quantum of one compiled batch lets each worker fill whole
 * batches instead of every replica running half-empty ones.
 *
 *   run      keep sending to one replica until it has received Q items in this run, then open
 *            a new run on the replica furthest behind (in whole quanta), then least loaded
 *   spread   each request to the replica with the fewest items in flight
 *   inflight the replica with the fewest whole quanta in flight, most items breaking ties
 *            (fills one replica's batch first)
 * Ties go to the least loaded worker (fill_least, counting every model's work on it) or in
 * rotation from a per-model cursor (fill_rr).
 *
 * Replicas with unequal weights (a model's load split unevenly by the packing) are chosen by a
 * deficit counter instead: every request credits each live replica its weight x items and debits
 * the chosen one the items times the live replicas' weights, and a new run of Q items opens on the replica with the most credit,
 * so over any stretch each replica receives its weight's share of the items to within about Q.
 * A replica that is down earns no credit, so the others' weights renormalise among themselves.
 */

export type FillMode = 'run' | 'spread' | 'inflight';
export type FillPolicy = 'fill_least' | 'fill_rr';

/** Q in items: one round(factor x max_batch), at least one; a model without a known batch gets 1. */
export function fillQuantum(maxBatch: number, factor: number): number {
  if (!(maxBatch > 0)) return 1;
  return Math.max(1, Math.round(factor * maxBatch));
}

/** What every model's routing reads and charges: outstanding work per worker, across models. */
export class WorkerLoad {
  private readonly load = new Map<string, number>();
  get(worker: string): number {
    return this.load.get(worker) ?? 0;
  }
  /** Loads quantised to nanoseconds of work so idle workers tie exactly. */
  quantised(worker: string): number {
    return Math.round(this.get(worker) * 1e9);
  }
  add(worker: string, weight: number): void {
    const v = this.get(worker) + weight;
    // Floating-point subtraction leaves dust; an idle worker must read exactly zero.
    this.load.set(worker, Math.abs(v) < 1e-9 ? 0 : v);
  }
}

export interface Reservation {
  /** The chosen replica first, then the failover order. */
  readonly order: readonly string[];
  /** Returns the reserved units and weight; safe to call more than once. */
  release(): void;
}

const cmpTuple = (a: readonly number[], b: readonly number[]): number => {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return 0;
};

/** The replicas of one model and the state of its fill plan. */
export class ReplicaRouter {
  private readonly outs: number[];
  private cursor = 0;
  private target = -1;
  private runUnits = 0;
  private weights: number[] = [];
  private readonly credit: number[];
  /** Whether the weights differ: equal weights keep the fill plan's in-flight balancing. */
  private weighted = false;

  constructor(
    readonly workers: readonly string[],
    private readonly quantum: number,
    private readonly mode: FillMode,
    private readonly policy: FillPolicy,
    private readonly load: WorkerLoad,
    weights?: readonly number[],
  ) {
    this.outs = workers.map(() => 0);
    this.credit = workers.map(() => 0);
    this.setWeights(weights ?? workers.map(() => 1));
  }

  /** Share of the model's items each replica should receive (same order as workers). */
  shares(): readonly number[] {
    return this.weights;
  }

  /** New weights for the same replicas (a repack that moved no model); credits carry over. */
  setWeights(weights: readonly number[]): void {
    const clean = this.workers.map((_, i) => {
      const w = weights[i] ?? 0;
      return Number.isFinite(w) && w > 0 ? w : 0;
    });
    const sum = clean.reduce((a, b) => a + b, 0);
    this.weights = sum > 0 ? clean.map((w) => w / sum) : clean.map(() => 1 / clean.length);
    const max = Math.max(...this.weights);
    const min = Math.min(...this.weights);
    this.weighted = max - min > 1e-6;
    if (!this.weighted) this.credit.fill(0);
  }

  /** Items in flight per replica (same order as workers). */
  outstanding(): readonly number[] {
    return this.outs;
  }

  /**
   * Picks a replica for a request of `units` items and reserves it; `weight` is what the
   * request charges its worker's cross-model load (items, compute estimate or 1).
   */
  route(units: number, weight: number, live?: readonly boolean[]): Reservation {
    const n = this.workers.length;
    const Q = this.quantum;
    const rot = (i: number) => (i - this.cursor + n) % n;
    const wl = (i: number) => (this.policy === 'fill_least' ? this.load.quantised(this.workers[i]!) : 0);
    const argmin = (key: (i: number) => number[]): number => {
      let best = 0;
      let bestKey = key(0);
      for (let i = 1; i < n; i++) {
        const k = key(i);
        if (cmpTuple(k, bestKey) < 0) {
          best = i;
          bestKey = k;
        }
      }
      return best;
    };
    let chosen: number;
    if (n === 1) {
      chosen = 0;
    } else if (this.weighted) {
      chosen = this.pickWeighted(units, live);
    } else if (this.mode === 'run') {
      const total = this.outs.reduce((a, b) => a + b, 0);
      const floorQ = Math.min(...this.outs.map((o) => Math.floor(o / Q)));
      const behind = (i: number) => (Math.floor(this.outs[i]! / Q) > floorQ ? 1 : 0);
      if (this.target < 0 || this.runUnits >= Q || behind(this.target) === 1 || total === 0) {
        chosen = argmin((i) => [behind(i), wl(i), rot(i)]);
        this.cursor = (chosen + 1) % n;
        this.target = chosen;
        this.runUnits = units;
      } else {
        chosen = this.target;
        this.runUnits += units;
      }
    } else if (this.mode === 'spread') {
      chosen = argmin((i) => [this.outs[i]!, wl(i), rot(i)]);
      this.cursor = (chosen + 1) % n;
    } else {
      const prog = (i: number) => [Math.floor(this.outs[i]! / Q), -this.outs[i]!];
      chosen = argmin((i) => [...prog(i), wl(i), rot(i)]);
      const best = prog(chosen);
      let ties = 0;
      for (let i = 0; i < n; i++) if (cmpTuple(prog(i), best) === 0) ties++;
      if (ties > 1) this.cursor = (chosen + 1) % n;
    }
    this.outs[chosen]! += units;
    const worker = this.workers[chosen]!;
    if (this.weighted) {
      // Credit and debit balance over the live replicas, so a down one's share is spread by weight.
      let liveSum = 0;
      for (let i = 0; i < n; i++)
        if (live?.[i] !== false) {
          this.credit[i]! += this.weights[i]! * units;
          liveSum += this.weights[i]!;
        }
      this.credit[chosen]! -= units * (liveSum > 0 ? liveSum : 1);
    }
    this.load.add(worker, weight);
    const rest = this.workers
      .map((w, i) => ({ w, i }))
      .filter((x) => x.i !== chosen)
      .sort(
        (a, b) =>
          Math.floor(this.outs[a.i]! / Q) - Math.floor(this.outs[b.i]! / Q) ||
          this.outs[a.i]! - this.outs[b.i]! ||
          (a.w < b.w ? -1 : 1),
      )
      .map((x) => x.w);
    let released = false;
    return {
      order: [worker, ...rest],
      release: () => {
        if (released) return;
        released = true;
        this.outs[chosen]! -= units;
        this.load.add(worker, -weight);
      },
    };
  }

  /** The replica by deficit: the current run while it lasts, else the live one most owed. */
  private pickWeighted(units: number, live?: readonly boolean[]): number {
    const up = (i: number): boolean => live?.[i] !== false && this.weights[i]! > 0;
    const runQ = this.mode === 'run' ? this.quantum : 1;
    if (this.target >= 0 && up(this.target) && this.runUnits < runQ) {
      this.runUnits += units;
      return this.target;
    }
    let best = -1;
    for (let i = 0; i < this.workers.length; i++) {
      if (!up(i)) continue;
      if (best < 0 || this.credit[i]! > this.credit[best]! + 1e-12) best = i;
    }
    // Every weighted replica down: the first live one, else the first (the caller reorders).
    if (best < 0)
      best = Math.max(
        0,
        this.workers.findIndex((_, i) => live?.[i] !== false),
      );
    this.target = best;
    this.runUnits = units;
    return best;
  }
}
