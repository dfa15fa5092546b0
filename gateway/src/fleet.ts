/**
 * The workers behind the gateway and what each serves. A health round asks every worker
 * ServerReady and RepositoryIndex(ready) at once and swaps in a new routing table (model ->
 * sorted worker names); rounds run on a period and on demand (an unknown model, a worker's
 * NOT_FOUND), at most once per `minRefreshMs`, with concurrent asks sharing one round. A worker
 * that stops answering for `wedgeRounds` rounds is marked down and reported (the supervisor
 * restarts it).
 */
import { status as Status } from '@grpc/grpc-js';
import {
  RepositoryIndexRequest,
  RepositoryIndexResponse,
  ServerReadyRequest,
  ServerReadyResponse,
  ModelStatisticsRequest,
  ModelStatisticsResponse,
} from '@hloserve/proto';
import type { FleetSample, ModelCounters } from './placement/load-estimator.js';
import { modelCounters } from './placement/model-counters.js';
import { WorkerClient, type WorkerAddress } from './worker-client.js';

export const INFER_SERVICE = '/inference.GRPCInferenceService';

export interface FleetOptions {
  readonly healthIntervalMs: number;
  readonly healthTimeoutMs: number;
  readonly wedgeRounds: number;
  readonly minRefreshMs: number;
  readonly workerMaxInFlight: number;
  readonly maxMessageBytes: number;
  readonly onWedged?: (worker: string) => void;
  readonly onRound?: () => void;
  /** Awaited before a worker that was not ready joins the routing table (replays registrations). */
  readonly onWorkerUp?: (worker: WorkerClient) => Promise<void>;
}

export interface WorkerSpec {
  readonly name: string;
  readonly address: WorkerAddress;
}

export class Fleet {
  readonly workers = new Map<string, WorkerClient>();
  private routes = new Map<string, readonly string[]>();
  private timer: ReturnType<typeof setTimeout> | null = null;
  private round: Promise<void> | null = null;
  private lastRoundMs = 0;
  private stopped = false;
  rounds = 0;

  constructor(
    specs: readonly WorkerSpec[],
    private readonly opts: FleetOptions,
  ) {
    for (const s of specs) this.add(s);
  }

  add(spec: WorkerSpec): void {
    const existing = this.workers.get(spec.name);
    if (existing) existing.setAddress(spec.address);
    else
      this.workers.set(
        spec.name,
        new WorkerClient(spec.name, spec.address, this.opts.workerMaxInFlight, this.opts.maxMessageBytes),
      );
  }

  /** Worker names holding `model` ready, sorted; empty when none. */
  holders(model: string): readonly string[] {
    return this.routes.get(model) ?? [];
  }

  models(): string[] {
    return [...this.routes.keys()].sort();
  }

  anyReady(): boolean {
    for (const w of this.workers.values()) if (w.ready) return true;
    return false;
  }

  readyWorkers(): WorkerClient[] {
    return [...this.workers.values()].filter((w) => w.ready);
  }

  start(): Promise<void> {
    const loop = () => {
      if (this.stopped) return;
      this.timer = setTimeout(() => void this.refresh(true).finally(loop), this.opts.healthIntervalMs);
      this.timer.unref();
    };
    return this.refresh(true).finally(loop);
  }

  /** One health round now (or joins the running one); `force` ignores the rate limit. */
  refresh(force = false): Promise<void> {
    // A forced round (a worker moved) must start after the change: one already running may have
    // asked the old address.
    if (this.round) return force ? this.round.then(() => this.refresh(true)) : this.round;
    if (!force && Date.now() - this.lastRoundMs < this.opts.minRefreshMs) return Promise.resolve();
    this.round = this.healthRound().finally(() => {
      this.lastRoundMs = Date.now();
      this.round = null;
    });
    return this.round;
  }

  private async healthRound(): Promise<void> {
    const deadline = () => Date.now() + this.opts.healthTimeoutMs;
    const table = new Map<string, string[]>();
    await Promise.all(
      [...this.workers.values()].map(async (w) => {
        const [ready, index] = await Promise.all([
          w.call(
            `${INFER_SERVICE}/ServerReady`,
            Buffer.from(ServerReadyRequest.encode({}).finish()),
            deadline(),
            undefined,
            undefined,
            true,
          ),
          w.call(
            `${INFER_SERVICE}/RepositoryIndex`,
            Buffer.from(RepositoryIndexRequest.encode({ repositoryName: '', ready: true }).finish()),
            deadline(),
            undefined,
            undefined,
            true,
          ),
        ]);
        const answered = ready.ok || (ready.code !== Status.DEADLINE_EXCEEDED && ready.code !== Status.UNAVAILABLE);
        w.silentRounds = answered ? 0 : w.silentRounds + 1;
        const wasReady = w.ready;
        const nowReady = ready.ok && ServerReadyResponse.decode(ready.body!).ready;
        if (nowReady && !wasReady) await this.opts.onWorkerUp?.(w);
        w.ready = nowReady;
        if (w.silentRounds === this.opts.wedgeRounds) this.opts.onWedged?.(w.name);
        if (!w.ready || !index.ok) return;
        for (const m of RepositoryIndexResponse.decode(index.body!).models) {
          if (m.state !== '' && m.state !== 'READY') continue;
          const list = table.get(m.name) ?? [];
          list.push(w.name);
          table.set(m.name, list);
        }
      }),
    );
    for (const list of table.values()) list.sort();
    this.routes = table;
    this.rounds++;
    this.opts.onRound?.();
  }

  /** Per-model counters of every ready worker (Triton statistics), for placement by measured load. */
  async sample(): Promise<FleetSample> {
    const out = new Map<string, Map<string, ModelCounters>>();
    await Promise.all(
      this.readyWorkers().map(async (w) => {
        const r = await w.call(
          `${INFER_SERVICE}/ModelStatistics`,
          Buffer.from(ModelStatisticsRequest.encode({ name: '', version: '' }).finish()),
          Date.now() + this.opts.healthTimeoutMs,
          undefined,
          undefined,
          true,
        );
        if (!r.ok) return;
        const models = new Map<string, ModelCounters>();
        for (const s of ModelStatisticsResponse.decode(r.body!).modelStats) models.set(s.name, modelCounters(s));
        out.set(w.name, models);
      }),
    );
    return out;
  }

  markDown(name: string): void {
    const w = this.workers.get(name);
    if (w) w.ready = false;
    const next = new Map<string, readonly string[]>();
    for (const [m, list] of this.routes) {
      const rest = list.filter((x) => x !== name);
      if (rest.length) next.set(m, rest);
    }
    this.routes = next;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    for (const w of this.workers.values()) w.close();
  }
}
