/**
 * The Gateway: one KServe endpoint in front of several workers. It owns the fleet (discovery and
 * health), the router (which worker), the placement controller (lpt_packing from measured load),
 * the inbound in-flight cap and the shared-memory registrations it has fanned out (replayed to
 * a worker that comes back). Transports (grpc-server.ts, http-server.ts) call into it.
 */
import { status as Status } from '@grpc/grpc-js';
import type { GrpcHeaders } from '@hloserve/common/h2/grpc-wire';
import { ModelConfigRequest, ModelConfigResponse } from '@hloserve/proto';
import { Fleet, INFER_SERVICE, type WorkerSpec } from './fleet.js';
import { GatewayMetrics } from './gateway-metrics.js';
import { MemoryPlacementState, type PlacementState } from './control/placement-state.js';
import { DEFAULT_PLACEMENT, PlacementController, type PlacementSettings } from './placement/placement-controller.js';
import { forwardDeadline } from './routing/deadline.js';
import { peekInfer } from './routing/infer-peek.js';
import { type FillSettings, Router, type RoutingMode } from './routing/router.js';
import { classifyFailure, droppedStatus, finalStatus, neverConnected, shouldRetry } from './routing/status.js';
import type { RawAnswer, WorkerClient } from './worker-client.js';

export interface GatewayOptions {
  readonly workers: readonly WorkerSpec[];
  readonly mode: RoutingMode;
  /** Inbound cap on requests inside the gateway; beyond it RESOURCE_EXHAUSTED. */
  readonly maxInFlight: number;
  /** Outbound cap per worker; beyond it requests wait their turn (within their deadline). */
  readonly workerMaxInFlight: number;
  readonly healthIntervalMs: number;
  readonly healthTimeoutMs: number;
  /** Health rounds without an answer before a worker is declared wedged. */
  readonly wedgeRounds: number;
  readonly placementIntervalMs: number;
  readonly placement: PlacementSettings;
  readonly fill: FillSettings;
  readonly maxMessageBytes: number;
  readonly onWedged?: (worker: string) => void;
  /** Where the operator's placement and its audit persist (default: this process's memory). */
  readonly state?: PlacementState;
}

/** The hot path's method, one string (a template per call would be built and hashed each time). */
const MODEL_INFER = `${INFER_SERVICE}/ModelInfer`;

/** How long the workers' memory caps read for the packing are reused. */
const CAPS_REFRESH_MS = 5000;

export const DEFAULT_GATEWAY: Omit<GatewayOptions, 'workers'> = {
  mode: 'lpt_packing',
  maxInFlight: 1024,
  workerMaxInFlight: 64,
  healthIntervalMs: 2000,
  healthTimeoutMs: 2000,
  wedgeRounds: 3,
  // A second: the debt's payback (placement/device-debt.ts) levels device time within a run of
  // traffic only if the weights follow it several times over; a poll is one statistics call per worker.
  placementIntervalMs: 1000,
  placement: DEFAULT_PLACEMENT,
  fill: { mode: 'run', policy: 'fill_least', factor: 1 },
  maxMessageBytes: 512 * 2 ** 20,
};

export interface InferCall {
  readonly body: Buffer;
  /** Epoch ms, or null. */
  readonly deadlineMs: number | null;
  readonly metadata?: GrpcHeaders;
  readonly onCancel?: (cancel: () => void) => void;
}

export class Gateway {
  readonly fleet: Fleet;
  readonly router: Router;
  readonly metrics = new GatewayMetrics();
  readonly placement: PlacementController;
  readonly state: PlacementState;
  /** Shared-memory registrations made through the gateway: region name -> register request bytes. */
  private readonly shmRegions = new Map<string, Buffer>();
  private placementTimer: ReturnType<typeof setInterval> | null = null;
  /** A placement poll is under way. */
  private ticking = false;
  /** The memory caps last read, and when (epoch ms). */
  private caps: { readonly at: number; readonly value: Map<string, number> } | null = null;
  /** Largest batch per model (from a holder's ModelConfig), sizing each model's fill quantum. */
  private readonly maxBatch = new Map<string, number>();

  constructor(readonly opts: GatewayOptions) {
    this.router = new Router(opts.mode, opts.fill);
    this.placement = new PlacementController(opts.placement);
    this.state = opts.state ?? new MemoryPlacementState();
    this.fleet = new Fleet(opts.workers, {
      healthIntervalMs: opts.healthIntervalMs,
      healthTimeoutMs: opts.healthTimeoutMs,
      wedgeRounds: opts.wedgeRounds,
      minRefreshMs: 250,
      workerMaxInFlight: opts.workerMaxInFlight,
      maxMessageBytes: opts.maxMessageBytes,
      onWedged: (w) => {
        this.fleet.markDown(w);
        opts.onWedged?.(w);
      },
      onWorkerUp: (w) => this.replayRegistrations(w),
    });
  }

  async start(): Promise<void> {
    await this.fleet.start();
    if (this.opts.mode === 'lpt_packing') {
      const models = this.fleet.models();
      const workers = [...this.fleet.workers.keys()];
      // The operator's replicas and moves from before a restart take effect from the first packing.
      this.placement.restore(await this.state.load(), workers);
      const first = this.placement.startup(models, workers, new Map());
      await this.learnMaxBatch(models);
      this.router.setPlacement(first.placement, this.maxBatch);
      // The first poll is the baseline the rates are measured from.
      await this.placementTick();
      this.placementTimer = setInterval(() => void this.placementTick(), this.opts.placementIntervalMs);
      this.placementTimer.unref();
    }
  }

  /** Adds a worker or moves one to a new address (a restart on another port). */
  setWorker(spec: WorkerSpec): void {
    this.fleet.add(spec);
    void this.fleet.refresh(true);
  }

  async placementTick(force = false): Promise<void> {
    // A poll that outlasts the interval (a loaded machine) is not overlapped by the next: the
    // estimator takes the samples in order.
    if (this.ticking && !force) return;
    this.ticking = true;
    try {
      await this.placementStep(force);
    } finally {
      this.ticking = false;
    }
  }

  private async placementStep(force: boolean): Promise<void> {
    const [sample, caps] = await Promise.all([this.fleet.sample(), this.memoryCaps()]);
    const result = this.placement.tick(
      sample,
      Date.now(),
      this.fleet.models(),
      [...this.fleet.workers.keys()],
      caps,
      force,
    );
    if (result) {
      await this.learnMaxBatch(this.fleet.models());
      this.router.setPlacement(result.placement, this.maxBatch);
    }
  }

  /**
   * Each worker's weight-cache budget (hloserve_weight_budget_bytes from its /metrics), the memory
   * cap of the packing; absent or unlimited (-1) means unconstrained.
   */
  private async memoryCaps(): Promise<Map<string, number>> {
    // A budget changes with a worker's settings, not its traffic: read every few seconds, not per poll.
    const now = Date.now();
    if (this.caps !== null && now - this.caps.at < CAPS_REFRESH_MS) return this.caps.value;
    const caps = new Map<string, number>();
    await Promise.all(
      [...this.fleet.workers.values()].map(async (w) => {
        if (!w.address.metrics || !w.ready) return;
        try {
          const r = await fetch(`http://${w.address.metrics}/metrics`, { signal: AbortSignal.timeout(2000) });
          const m = /^hloserve_weight_budget_bytes(?:\{[^}]*\})? (\S+)/m.exec(await r.text());
          const v = m ? Number(m[1]) : NaN;
          if (v > 0) caps.set(w.name, v);
        } catch {
          /* no cap known: unconstrained */
        }
      }),
    );
    this.caps = { at: now, value: caps };
    return caps;
  }

  private async learnMaxBatch(models: readonly string[]): Promise<void> {
    const body = (name: string) => Buffer.from(ModelConfigRequest.encode({ name, version: '' }).finish());
    await Promise.all(
      models
        .filter((m) => !this.maxBatch.has(m))
        .map(async (m) => {
          const w = this.fleet.workers.get(this.fleet.holders(m)[0] ?? '');
          if (!w) return;
          const a = await w.call(
            `${INFER_SERVICE}/ModelConfig`,
            body(m),
            Date.now() + 2000,
            undefined,
            undefined,
            true,
          );
          if (a.ok) this.maxBatch.set(m, ModelConfigResponse.decode(a.body!).config?.maxBatchSize ?? 0);
        }),
    );
  }

  /** Forwards one ModelInfer body; the answer is the worker's, bytes untouched. */
  async infer(call: InferCall, protocol = 'grpc'): Promise<RawAnswer> {
    const started = performance.now();
    let model = '';
    const done = (a: RawAnswer): RawAnswer => {
      this.metrics.count(
        protocol,
        model,
        a.ok ? 'OK' : (Status[a.code!] ?? String(a.code)),
        (performance.now() - started) / 1000,
      );
      return a;
    };
    if (this.metrics.inFlight >= this.opts.maxInFlight) {
      this.metrics.shed++;
      return done({
        ok: false,
        code: Status.RESOURCE_EXHAUSTED,
        details: `the gateway has ${this.opts.maxInFlight} requests in flight`,
      });
    }
    this.metrics.inFlight++;
    try {
      let items: number;
      try {
        ({ modelName: model, items } = peekInfer(call.body));
      } catch (err) {
        return done({
          ok: false,
          code: Status.INVALID_ARGUMENT,
          details: `request is not a valid ModelInferRequest: ${(err as Error).message}`,
        });
      }
      return done(
        await this.forward(
          model,
          items,
          (w, deadline) => w.call(MODEL_INFER, call.body, deadline, call.metadata, call.onCancel),
          call.deadlineMs,
        ),
      );
    } finally {
      this.metrics.inFlight--;
    }
  }

  /**
   * Sends a request about `model` to the worker the router picks, failing over to the next holder
   * only where the request cannot have run on this one (routing/status.ts). A call cut off mid-way
   * answers UNAVAILABLE and is not re-sent.
   */
  async forward<A extends RawAnswer>(
    model: string,
    items: number,
    send: (w: WorkerClient, deadlineMs: number | null) => Promise<A>,
    deadlineMs: number | null,
  ): Promise<A | RawAnswer> {
    let holders = this.fleet.holders(model);
    if (holders.length === 0) {
      await this.fleet.refresh();
      holders = this.fleet.holders(model);
    }
    const res = this.router.route(model, items, holders);
    if (!res) return { ok: false, ...finalStatus(null, model) };
    let last: A | null = null;
    try {
      for (const name of res.order) {
        const w = this.fleet.workers.get(name);
        if (!w) continue;
        const fwd = forwardDeadline(deadlineMs, Date.now());
        if (fwd.kind === 'expired')
          return { ok: false, code: Status.DEADLINE_EXCEEDED, details: 'deadline exceeded at the gateway' };
        const ans = await send(w, fwd.kind === 'ms' ? Date.now() + fwd.remainingMs : null);
        if (ans.ok) return ans;
        last = ans;
        const outcome = classifyFailure({ code: ans.code!, details: ans.details ?? '' });
        if (ans.code === Status.NOT_FOUND) void this.fleet.refresh();
        if (ans.code === Status.UNAVAILABLE && neverConnected(ans.details ?? '')) this.fleet.markDown(name);
        if (outcome === 'dropped') {
          this.fleet.markDown(name);
          this.metrics.dropped++;
          return { ok: false, ...droppedStatus(name, ans.details ?? '') };
        }
        if (!shouldRetry(outcome)) return ans;
        this.metrics.retries++;
      }
    } finally {
      res.release();
    }
    if (last) return last;
    const f = finalStatus(null, model);
    return { ok: false, code: f.code, details: f.details };
  }

  /**
   * Shared-memory registration goes to every worker (any may run the request). All must accept;
   * otherwise the ones that did are rolled back and the first failure is returned.
   */
  async registerSharedMemory(name: string, body: Buffer, deadlineMs: number | null): Promise<RawAnswer> {
    const workers = [...this.fleet.workers.values()].filter((w) => w.ready);
    if (workers.length === 0) return { ok: false, code: Status.UNAVAILABLE, details: 'no worker is ready' };
    const answers = await Promise.all(
      workers.map((w) =>
        w.call(`${INFER_SERVICE}/SystemSharedMemoryRegister`, body, deadlineMs, undefined, undefined, true),
      ),
    );
    const failed = answers.find((a) => !a.ok);
    if (failed) {
      const unreg = Buffer.from(encodeName(name));
      await Promise.all(
        workers.map((w, i) =>
          answers[i]!.ok
            ? w.call(`${INFER_SERVICE}/SystemSharedMemoryUnregister`, unreg, null, undefined, undefined, true)
            : null,
        ),
      );
      return failed;
    }
    this.shmRegions.set(name, body);
    return answers[0]!;
  }

  /** Unregisters everywhere; succeeds if any worker did (a restarted one no longer has it). */
  async unregisterSharedMemory(name: string, body: Buffer, deadlineMs: number | null): Promise<RawAnswer> {
    if (name === '') this.shmRegions.clear();
    else this.shmRegions.delete(name);
    const answers = await Promise.all(
      [...this.fleet.workers.values()]
        .filter((w) => w.ready)
        .map((w) =>
          w.call(`${INFER_SERVICE}/SystemSharedMemoryUnregister`, body, deadlineMs, undefined, undefined, true),
        ),
    );
    return (
      answers.find((a) => a.ok) ?? answers[0] ?? { ok: false, code: Status.UNAVAILABLE, details: 'no worker is ready' }
    );
  }

  /** A worker that comes back (restarted) gets the registrations the others hold. */
  private async replayRegistrations(w: WorkerClient): Promise<void> {
    for (const body of this.shmRegions.values()) {
      await w.call(`${INFER_SERVICE}/SystemSharedMemoryRegister`, body, Date.now() + 2000, undefined, undefined, true);
    }
  }

  /** The gateway's /metrics: its own families, then every worker's labelled with its name. */
  async metricsText(): Promise<string> {
    const { mergeExpositions } = await import('./metrics-merge.js');
    const own = this.metrics.render({
      maxInFlight: this.opts.maxInFlight,
      workers: [...this.fleet.workers.values()].map((w) => ({
        name: w.name,
        ready: w.ready,
        outstanding: w.outstanding,
      })),
      placement: this.router.placement(),
      routes: this.fleet.models().length,
      repacks: this.placement.repacks,
      reweighs: this.placement.reweighs,
      joins: this.placement.joins,
      measuredSpread: this.placement.spread.lastSpread,
      replicaFactors: this.placement.feedback.replicaFactors(),
      workerFactors: this.placement.feedback.workerFactors(),
      workerDebts: this.placement.debt.debts(),
    });
    const workerTexts = await Promise.all(
      [...this.fleet.workers.values()].map(async (w) => {
        if (!w.address.metrics) return null;
        try {
          const r = await fetch(`http://${w.address.metrics}/metrics`, { signal: AbortSignal.timeout(2000) });
          return r.ok ? { text: await r.text(), worker: w.name } : null;
        } catch {
          return null;
        }
      }),
    );
    return mergeExpositions([{ text: own, worker: null }, ...workerTexts.filter((x) => x !== null)]);
  }

  stop(): void {
    if (this.placementTimer) clearInterval(this.placementTimer);
    this.fleet.stop();
  }
}

/** A SystemSharedMemoryUnregisterRequest { name } (field 1) without the generated encoder. */
function encodeName(name: string): Uint8Array {
  const b = Buffer.from(name, 'utf8');
  return Buffer.concat([Buffer.from([0x0a]), varint(b.length), b]);
}

function varint(n: number): Buffer {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return Buffer.from(out);
}
