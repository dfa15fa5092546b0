/**
 * The dispatch loop: per-model FIFO queues, one loop choosing which model runs next by discipline,
 * batches planned at compiled sizes, the device work delegated to an injected Executor.
 *
 * Decisions that differ from the reference (ReactantServer.jl), and why:
 * - A full queue answers HLO_ERR_QUEUE_FULL (RESOURCE_EXHAUSTED) at once, so clients back off.
 * - A request larger than the largest compiled size is refused at submit (INVALID_ARGUMENT).
 * - dispatch_timeout_seconds is enforced: when an execution overruns, its callers are answered
 *   DEADLINE_EXCEEDED and the executor's signal is aborted. The device work itself cannot be
 *   cancelled, so its slot (and weight lease) stays held until it really returns: starting more
 *   work on a device that is stuck would only pile up, and the weights it reads must not be freed.
 * - Optional batching window per model (max_queue_delay_us): a model whose queue holds fewer rows
 *   than its largest usable batch is not eligible until the window (counted from its front
 *   request's arrival) closes. Other models with work ready are served meanwhile; the device idles
 *   only when every model with work is inside its window.
 * - The next dispatch's weights are acquired (Executor.prepare) while the current one executes;
 *   its batch is planned only when a slot frees, so requests arriving meanwhile still join it.
 * - Selection is O(models with work): per-model deadline heaps, lazily decayed recency sums, and
 *   batch planning that reads at most max-batch requests of each queue.
 */
import type { CancelSignal } from '@hloserve/common/cancellation';
import { ServeError, toServeError } from '@hloserve/common/errors';
import type { HostTensor } from '../tensor.js';
import { systemClock, type Clock, type TimerHandle } from './clock.js';
import { BatchBufferPool } from './batch-buffers.js';
import { CoalesceKeyMemo, coalesceInputs, requestRows, sliceOutputs } from './coalesce.js';
import { CostTable, DEFAULT_COST_SECONDS } from './cost-estimate.js';
import { cannotMeetDeadline } from './deadline-admission.js';
import { DeadlineHeap } from './deadline-heap.js';
import { selectCandidate, type Discipline, type SelectionCandidate } from './discipline.js';
import {
  consoleLogger,
  type DropReason,
  type SchedulerEvent,
  type SchedulerEventListener,
  type SchedulerLogger,
} from './events.js';
import type { ExecutionLease, Executor } from './executor.js';
import { effectiveCost, fairPriority } from './fair-priority.js';
import { ModelCounters, type ModelSchedulingStats } from './model-counters.js';
import {
  resolveModelInfo,
  rowsProblem,
  type ModelDefaults,
  type ModelPolicyPatch,
  type ModelSchedulingInfo,
  type ResolvedModelInfo,
} from './model-info.js';
import { planBatch, planScanRows, type BatchPlan } from './plan-batch.js';
import { RecencyLedger } from './recency-ema.js';
import { RequestQueue, type QueueNode } from './request-queue.js';

/** What reused batch buffers may hold while idle, across all models. */
const BATCH_BUFFER_POOL_BYTES = 32 * 1024 * 1024;

/** What a non-cancellable executor is given as its dispatch's signal. */
const NEVER_ABORTED: AbortSignal = new AbortController().signal;

/**
 * A batch whose measured execution takes at most this long may run on the event loop's thread
 * when it holds one request and nothing else is executing, queued, being prepared or (per
 * `aloneOutsideQueue`) in hand (ExecutionRequest.mayRunInline): a single caller's cheap model. Handing it to the addon's pool instead costs two thread wake-ups
 * (the pool thread, then the event loop for the completion) and a loop turn, which on mlp's
 * 90 µs batch-1 program were as long as the program (bench/RESULTS.md, "The single-caller path").
 * The bound caps how long a request arriving meanwhile waits to be read.
 */
export const INLINE_MAX_SECONDS = 0.002;

export interface SchedulerOptions<L extends ExecutionLease = ExecutionLease, V = unknown> {
  readonly executor: Executor<L, V>;
  /** Default 'fair'. */
  readonly discipline?: Discipline;
  /** Device executions in flight at once; default 1 (one stream, as the reference). */
  readonly maxInflight?: number;
  /**
   * Whether the caller has no other request in hand (decoding, answering), asked before marking a
   * dispatch mayRunInline: under load the queue can be empty for a moment while other requests are
   * still on their way in or out, and those must not wait for an inline execution. Default: no
   * such requests. Without it nothing runs inline.
   */
  readonly aloneOutsideQueue?: () => boolean;
  /** Halflife of the fair discipline's recent-compute memory; default 30 s. */
  readonly emaHalflifeSeconds?: number;
  /** recency_penalty_cap in (0, 1]; default 0.25. */
  readonly recencyPenaltyCap?: number;
  /** coalescing_discount in [0, 1); default 0.1. */
  readonly coalescingDiscount?: number;
  /** cost_ema_alpha in (0, 1]; default 0.2. */
  readonly costEmaAlpha?: number;
  /** Cost assumed for a never-measured (model, batch size); default 0.01 s. */
  readonly defaultCostSeconds?: number;
  /** Per-model queue capacity unless the model sets its own; default 1024. */
  readonly maxQueueDepth?: number;
  /** Batching window for models that set none (max_queue_delay_us); default 0 (no window). */
  readonly maxQueueDelayUs?: number;
  /** Execution watchdog; 0 disables; default 30. */
  readonly dispatchTimeoutSeconds?: number;
  /** Let measured costs pick a larger compiled size when it is cheaper per row; default true. */
  readonly costAwareBatching?: boolean;
  /**
   * How long (ms) fair and fifo may hold back a model whose weights are not resident while models
   * that are resident have work: cache hits go first, and the cold model's requests gather so one
   * upload serves several. Bounded, so no model starves; edf never holds. 0 disables; default 0.
   */
  readonly coldHoldMs?: number;
  readonly clock?: Clock;
  readonly logger?: SchedulerLogger;
  readonly onEvent?: SchedulerEventListener;
}

/** Filled in by the scheduler as the request progresses (the transport's metrics read it). */
/**
 * What the scheduler tells a caller about its request, written as it goes. The clock readings let
 * a caller time its own steps around submit() without reading the clock again (each reading costs
 * about 0.1 us here, and a request is a few microseconds of host work in all).
 */
export interface RequestTiming {
  /** Scheduler clock (ms) when submit() accepted the request. */
  submittedAt?: number;
  /** Scheduler clock (ms) when its execution returned, just before the caller is answered. */
  settledAt?: number;
  queueSeconds?: number;
  computeSeconds?: number;
  batchSize?: number;
  batchRows?: number;
}

export interface SubmitOptions<V = unknown> {
  /**
   * The model version the caller admitted the request to (decoded against). The request runs on
   * the version current at submit; a caller that names another one is refused, never run on a
   * program it was not checked against.
   */
  readonly version?: V;
  /** Absolute deadline in the scheduler clock's milliseconds (scheduler.now() + budget); null = none. */
  readonly deadline?: number | null;
  /** Cancels the request: removed if queued, answered CANCELLED at once if executing. */
  readonly signal?: CancelSignal;
  readonly timing?: RequestTiming;
  /**
   * A meta model's sub-call: queued ahead of its model's fresh requests, and its model served
   * before models whose front request is fresh, so that a started pipeline finishes first.
   */
  readonly nested?: boolean;
}

export interface ShutdownOptions {
  /** true: serve everything queued first (windows close at once); false: reject queued work. */
  readonly drain: boolean;
}

type RequestState = 'queued' | 'running' | 'settled';

interface PendingRequest {
  readonly model: ModelState;
  /** The version (and its planning facts) current when the request was queued; it runs on it. */
  readonly version: unknown;
  readonly info: ResolvedModelInfo;
  readonly inputs: readonly HostTensor[];
  readonly rows: number;
  key: string;
  readonly arrival: number;
  /** Heap key: the deadline, or Infinity (then the request is not in the heap). */
  readonly deadline: number;
  heapIndex: number;
  node: QueueNode<PendingRequest> | null;
  state: RequestState;
  readonly resolve: (outputs: HostTensor[]) => void;
  readonly reject: (err: ServeError) => void;
  readonly signal: CancelSignal | undefined;
  onAbort: (() => void) | null;
  readonly timing: RequestTiming | undefined;
}

declare const modelQueueBrand: unique symbol;

/**
 * A model's place in the scheduler: its queue, deadlines, learned costs and counters. addModel
 * hands it out and whoever added the model keeps it (the worker's registry keeps it on the
 * model's slot); every per-model call takes it, so the scheduler keeps no index by name that
 * would have to follow renames and unloads in step with the registry.
 */
export interface ModelQueue {
  readonly [modelQueueBrand]: true;
  /** The model's current name (a rename changes it). */
  readonly name: string;
}

interface ModelState {
  readonly name: string;
  /** As given (patches merge here, so a knob reset to null falls back to the default again). */
  spec: ModelSchedulingInfo;
  info: ResolvedModelInfo;
  /** The version new requests run on (replaceModel swaps it with info, atomically). */
  version: unknown;
  readonly queue: RequestQueue<PendingRequest>;
  readonly deadlines: DeadlineHeap<PendingRequest>;
  costs: CostTable;
  /** costs.measured, made once for planBatch (whichever CostTable the model holds then). */
  readonly measuredCost: (batchSize: number) => number | undefined;
  readonly counters: ModelCounters;
  readonly keys: CoalesceKeyMemo;
  removed: boolean;
  inflightRequests: number;
}

interface Staged<L> {
  readonly model: ModelState;
  /** The version the lease was prepared for: the front request's. */
  readonly version: unknown;
  lease: L | null;
  /** Chosen again when its slot freed (the first choice was stale): it launches as it is. */
  readonly rechosen: boolean;
}

/** What a model's queue offers right now. */
interface QueueView {
  /** Rows of the front run of mutually coalescable requests, cut where planning stops reading. */
  readonly prefixRows: number[];
  /** False while the batching window holds the model back. */
  readonly ready: boolean;
  /** When the window closes (clock ms), if it is what holds the model back. */
  readonly windowEndsAt: number | null;
}

interface Candidate extends SelectionCandidate {
  readonly state: ModelState;
}
type Writable<T> = { -readonly [K in keyof T]: T[K] };

export class Scheduler<L extends ExecutionLease = ExecutionLease, V = unknown> {
  readonly clock: Clock;
  readonly #executor: Executor<L, V>;
  #discipline: Discipline;
  readonly #maxInflight: number;
  readonly #aloneOutsideQueue: (() => boolean) | null;
  /** The lone request whose inline run waited one event-loop turn (#deferForInline). */
  #inlineProbe: PendingRequest | null = null;
  /**
   * #select's scratch: the candidates of the running choice, overwritten by the next (the choice is
   * synchronous and keeps only the winner's state), so a pump allocates no array or records.
   */
  readonly #candidates: Candidate[] = [];
  readonly #candidatePool: Writable<Candidate>[] = [];
  readonly #cap: number;
  readonly #discount: number;
  readonly #coldHoldMs: number;
  readonly #alpha: number;
  readonly #defaultCost: number;
  readonly #defaults: ModelDefaults;
  readonly #timeoutSeconds: number;
  readonly #costAware: boolean;
  readonly #logger: SchedulerLogger;
  readonly #onEvent: SchedulerEventListener | undefined;

  /** Every model added and not removed (stats and metrics list them; nothing looks one up by name). */
  readonly #models = new Set<ModelState>();
  /** Models whose queue is non-empty: the only ones selection looks at. */
  readonly #withWork = new Set<ModelState>();
  readonly #ledger: RecencyLedger<ModelState>;
  #staged: Staged<L> | null = null;
  #executing = 0;
  #pumpQueued = false;
  /** Reused batch buffers, when the executor releases its inputs on settling. */
  readonly #batchBuffers: BatchBufferPool | null;
  #wakeTimer: TimerHandle | null = null;
  #wakeAt = Infinity;
  #shutdown: ShutdownOptions | null = null;
  #idleWaiters: (() => void)[] = [];

  constructor(options: SchedulerOptions<L, V>) {
    this.#executor = options.executor;
    this.#discipline = options.discipline ?? 'fair';
    this.#maxInflight = options.maxInflight ?? 1;
    this.#aloneOutsideQueue = options.aloneOutsideQueue ?? null;
    this.#batchBuffers =
      options.executor.releasesInputs === true
        ? new BatchBufferPool(BATCH_BUFFER_POOL_BYTES, this.#maxInflight + 1)
        : null;
    this.#cap = options.recencyPenaltyCap ?? 0.25;
    this.#discount = options.coalescingDiscount ?? 0.1;
    this.#alpha = options.costEmaAlpha ?? 0.2;
    this.#defaultCost = options.defaultCostSeconds ?? DEFAULT_COST_SECONDS;
    this.#defaults = { maxQueueDepth: options.maxQueueDepth ?? 1024, maxQueueDelayUs: options.maxQueueDelayUs ?? 0 };
    this.#timeoutSeconds = options.dispatchTimeoutSeconds ?? 30;
    this.#costAware = options.costAwareBatching ?? true;
    this.#coldHoldMs = options.coldHoldMs ?? 0;
    this.clock = options.clock ?? systemClock;
    this.#logger = options.logger ?? consoleLogger;
    this.#onEvent = options.onEvent;
    this.#ledger = new RecencyLedger<ModelState>(options.emaHalflifeSeconds ?? 30);
    const bad = (what: string): never => {
      throw new ServeError('HLO_ERR_CONFIG_INVALID', `scheduler: ${what}`);
    };
    if (!Number.isSafeInteger(this.#maxInflight) || this.#maxInflight < 1) bad('maxInflight must be >= 1');
    if (!(this.#cap > 0 && this.#cap <= 1)) bad('recency_penalty_cap must be in (0, 1]');
    if (!(this.#discount >= 0 && this.#discount < 1)) bad('coalescing_discount must be in [0, 1)');
    if (!(this.#alpha > 0 && this.#alpha <= 1)) bad('cost_ema_alpha must be in (0, 1]');
    if (!(this.#ledger.halflifeSeconds > 0)) bad('ema_halflife_seconds must be > 0');
    const { maxQueueDepth, maxQueueDelayUs } = this.#defaults;
    if (!Number.isSafeInteger(maxQueueDepth) || maxQueueDepth < 1) bad('max_queue_depth must be >= 1');
    if (!(maxQueueDelayUs >= 0) || !Number.isFinite(maxQueueDelayUs)) bad('max_queue_delay_us must be >= 0');
    if (!(this.#timeoutSeconds >= 0)) bad('dispatch_timeout_seconds must be >= 0');
    if (!(this.#coldHoldMs >= 0) || !Number.isFinite(this.#coldHoldMs)) bad('cold_hold_us must be >= 0');
  }

  now(): number {
    return this.clock.now();
  }

  get discipline(): Discipline {
    return this.#discipline;
  }

  setDiscipline(discipline: Discipline): void {
    this.#discipline = discipline;
    this.#schedulePump();
  }

  // ---- models -------------------------------------------------------------------------------

  /** Schedules a model; the caller keeps the returned queue and names the model by it from then on. */
  addModel(info: ModelSchedulingInfo, version?: V): ModelQueue {
    const resolved = resolveModelInfo(info, this.#defaults);
    const st: ModelState = {
      get name() {
        return this.spec.name;
      },
      spec: info,
      info: resolved,
      version,
      queue: new RequestQueue(),
      deadlines: new DeadlineHeap(),
      costs: new CostTable(this.#alpha, this.#defaultCost),
      measuredCost: (b) => st.costs.measured(b),
      counters: new ModelCounters(),
      keys: new CoalesceKeyMemo(),
      removed: false,
      inflightRequests: 0,
    };
    this.#models.add(st);
    return st as unknown as ModelQueue;
  }

  /** The models scheduled now, by name. */
  queues(): ModelQueue[] {
    return [...this.#models].sort(byName) as unknown as ModelQueue[];
  }

  /** Changes policy knobs of a serving model; queued work is kept. A null knob reverts to the default. */
  updateModel(queue: ModelQueue, patch: ModelPolicyPatch): void {
    const st = this.#require(queue);
    const spec: ModelSchedulingInfo = { ...st.spec, ...patch, name: st.name };
    const next = resolveModelInfo(spec, this.#defaults);
    st.spec = spec;
    st.info = next;
    this.#schedulePump();
  }

  /**
   * Swaps a model's version (a reload) in one step, keeping its queue: requests queued before run
   * on the version they were queued with (its executables, its weights, its batch sizes), never
   * batched with requests of another version; requests submitted after run on `version`. Learned
   * costs are reset because they belonged to the old executables.
   */
  replaceModel(queue: ModelQueue, info: ModelSchedulingInfo, version?: V): void {
    const st = this.#require(queue);
    const next = resolveModelInfo(info, this.#defaults);
    st.spec = info;
    st.info = next;
    st.version = version;
    st.costs = new CostTable(this.#alpha, this.#defaultCost);
    this.#schedulePump();
  }

  /**
   * A model renamed in place (to `info.name`): its queue, counters, costs and recent device time
   * stay, and new requests run on `version`; requests queued before keep the version they were
   * queued with.
   */
  renameModel(queue: ModelQueue, info: ModelSchedulingInfo, version?: V): void {
    const st = this.#require(queue);
    st.spec = info;
    st.info = resolveModelInfo(info, this.#defaults);
    st.version = version;
    this.#schedulePump();
  }

  /** Requests queued or executing for a model (what an unload waits on while it drains). */
  pendingRequests(queue: ModelQueue): number {
    const st = queue as unknown as ModelState;
    return st.removed ? 0 : st.queue.length + st.inflightRequests;
  }

  /**
   * Unschedules a model. Queued requests are answered HLO_ERR_MODEL_NOT_FOUND ("was unloaded");
   * an execution already on the device completes and answers its callers normally.
   */
  removeModel(queue: ModelQueue): boolean {
    const st = queue as unknown as ModelState;
    if (st.removed) return false;
    st.removed = true;
    this.#models.delete(st);
    const err = new ServeError('HLO_ERR_MODEL_NOT_FOUND', `model '${st.name}' was unloaded`);
    for (const node of [...st.queue]) this.#dropQueued(node.value, 'unloaded', err);
    this.#withWork.delete(st);
    this.#ledger.remove(st, this.#seconds());
    // A lease acquired for it is released when its prepare() settles.
    if (this.#staged?.model === st) this.#abandonStaged();
    this.#schedulePump();
    return true;
  }

  /** Seeds a learned cost (warmup probe, or restored state). */
  seedCost(queue: ModelQueue, batchSize: number, seconds: number): void {
    this.#require(queue).costs.seed(batchSize, seconds);
  }

  // ---- requests -----------------------------------------------------------------------------

  /**
   * Queues one request (executable inputs in manifest order) and resolves with its outputs.
   * Never throws synchronously: every refusal is a rejected promise carrying a ServeError.
   */
  submit(
    queue: ModelQueue | null,
    inputs: readonly HostTensor[],
    options: SubmitOptions<V> = {},
  ): Promise<HostTensor[]> {
    const found = queue as unknown as ModelState | null;
    const st = found === null || found.removed ? undefined : found;
    if (this.#shutdown !== null)
      return this.#refuse(st, new ServeError('HLO_ERR_SHUTTING_DOWN', 'server is shutting down'), null);
    if (st === undefined)
      return this.#refuse(
        st,
        new ServeError('HLO_ERR_MODEL_NOT_FOUND', `unknown model${found === null ? '' : ` '${found.name}'`}`),
        null,
      );
    const model = st.name;
    if (options.signal?.aborted)
      return this.#refuse(st, new ServeError('HLO_ERR_CANCELLED', 'request cancelled'), 'cancelled');
    if (options.version !== undefined && options.version !== st.version) {
      return this.#refuse(
        st,
        new ServeError('HLO_ERR_MODEL_NOT_READY', `model '${model}' changed version between admission and queueing`),
        null,
      );
    }
    const info = st.info;
    const version = st.version;
    let rows: number;
    let key = '';
    try {
      rows = requestRows(inputs, info.inputBatchAxes);
      const problem = rowsProblem(info, rows);
      if (problem !== null) throw problem;
      if (info.coalescable) key = st.keys.keyOf(inputs, info.inputBatchAxes);
    } catch (e) {
      return this.#refuse(st, toServeError(e), 'invalid');
    }
    const now = this.clock.now();
    const deadline = options.deadline ?? null;
    if (cannotMeetDeadline(deadline, now, 0)) {
      return this.#refuse(
        st,
        new ServeError('HLO_ERR_DEADLINE_EXCEEDED', `model '${model}': deadline already passed`),
        'expired',
      );
    }
    if (st.queue.length >= info.maxQueueDepth) {
      return this.#refuse(
        st,
        new ServeError('HLO_ERR_QUEUE_FULL', `model '${model}': queue is full (max_queue_depth ${info.maxQueueDepth})`),
        'queue-full',
      );
    }
    return new Promise<HostTensor[]>((resolve, reject) => {
      const r: PendingRequest = {
        model: st,
        version,
        info,
        inputs,
        rows,
        key,
        arrival: now,
        deadline: deadline ?? Infinity,
        heapIndex: -1,
        node: null,
        state: 'queued',
        resolve,
        reject,
        signal: options.signal,
        onAbort: null,
        timing: options.timing,
      };
      if (r.timing !== undefined) r.timing.submittedAt = now;
      r.node = options.nested === true ? st.queue.pushAhead(r, rows) : st.queue.push(r, rows);
      if (deadline !== null) st.deadlines.push(r);
      this.#withWork.add(st);
      if (r.signal !== undefined) {
        r.onAbort = () => this.#onAbort(r);
        r.signal.addEventListener('abort', r.onAbort, { once: true });
      }
      // Deferred so that requests submitted in the same tick can share the next dispatch.
      this.#schedulePump();
    });
  }

  /** A refused submit: counted as a drop where it names a reason, and rejected. */
  #refuse(st: ModelState | undefined, err: ServeError, reason: DropReason | null): Promise<never> {
    if (st !== undefined && reason !== null) this.#countDrop(st, reason, err);
    return Promise.reject(err);
  }

  // ---- observation --------------------------------------------------------------------------

  queueDepth(queue: ModelQueue): number {
    const st = queue as unknown as ModelState;
    return st.removed ? 0 : st.queue.length;
  }

  /** A model's requests answered so far: stats()'s counter without the rest of stats(). */
  requestsServed(queue: ModelQueue): number {
    const st = queue as unknown as ModelState;
    return st.removed ? 0 : st.counters.requestsServed;
  }

  /** Requests executing now, summed over the models without building each one's stats(). */
  get inflightRequests(): number {
    let n = 0;
    for (const st of this.#models) n += st.inflightRequests;
    return n;
  }

  /** Executions on the device right now. */
  get executing(): number {
    return this.#executing;
  }

  stats(queue: ModelQueue | null): ModelSchedulingStats | undefined {
    const st = queue as unknown as ModelState | null;
    if (st === null || st.removed) return undefined;
    const c = st.counters;
    return {
      model: st.name,
      weight: st.info.weight,
      queueDepth: st.queue.length,
      queuedRows: st.queue.rows,
      oldestWaitMs: st.queue.front === null ? 0 : Math.max(0, this.clock.now() - st.queue.front.value.arrival),
      inflightRequests: st.inflightRequests,
      requestsServed: c.requestsServed,
      rowsServed: c.rowsServed,
      paddedRows: c.paddedRows,
      dispatchCount: c.dispatchCount,
      // An object's integer keys enumerate in ascending order: no sort needed.
      batchSizeHistogram: Object.fromEntries(c.batchSizeHistogram),
      queueWaitSecondsTotal: c.queueWaitSecondsTotal,
      queueWaitCount: c.queueWaitCount,
      computeSecondsTotal: c.computeSecondsTotal,
      failedDispatches: c.failedDispatches,
      dispatchTimeouts: c.dispatchTimeouts,
      dropped: { ...c.dropped },
      costEstimates: st.costs.snapshot(),
      recentComputeSeconds: this.#ledger.value(st, this.#seconds()),
      maxRows: st.info.maxRows,
    };
  }

  allStats(): ModelSchedulingStats[] {
    return this.queues().map((q) => this.stats(q)!);
  }

  // ---- shutdown -----------------------------------------------------------------------------

  /**
   * Stops accepting work. drain: queued requests are still served (batching windows close at
   * once); otherwise they are answered HLO_ERR_SHUTTING_DOWN. Resolves when nothing is queued or
   * executing. A later call with drain=false escalates a draining shutdown.
   */
  shutdown(options: ShutdownOptions): Promise<void> {
    if (this.#shutdown === null || !options.drain) this.#shutdown = options;
    if (!options.drain) {
      const err = new ServeError('HLO_ERR_SHUTTING_DOWN', 'server is shutting down');
      for (const st of [...this.#withWork])
        for (const node of [...st.queue]) this.#dropQueued(node.value, 'shutdown', err);
      if (this.#staged !== null) this.#abandonStaged();
    }
    const idle = new Promise<void>((resolve) => this.#idleWaiters.push(resolve));
    this.#schedulePump();
    return idle;
  }

  // ---- the loop -----------------------------------------------------------------------------

  // Made once: a closure per pump or per inline probe was a few hundred bytes of garbage per
  // request at one caller, where each scavenge delays a request (bench/alloc.mjs).
  readonly #runPump = (): void => {
    this.#pumpQueued = false;
    this.#pump();
  };
  readonly #pumpSoon = (): void => this.#schedulePump();

  #schedulePump(): void {
    if (this.#pumpQueued) return;
    this.#pumpQueued = true;
    queueMicrotask(this.#runPump);
  }

  #pump(): void {
    const now = this.clock.now();
    this.#dropExpired(now);
    for (;;) {
      const staged = this.#staged;
      if (staged !== null) {
        if (staged.lease === null || this.#executing >= this.#maxInflight) break;
        // The choice was made while the device was busy, often as the last dispatch started; work
        // that arrived since may rank higher (a cheap model under its share whose callers were
        // waiting for that dispatch's answers). Choose again now that the slot is free; a lease no
        // longer wanted goes back. Once per slot, so two choices cannot chase each other.
        if (!staged.rechosen) {
          const winner = this.#select(now);
          if (winner !== undefined && winner !== staged.model) {
            this.#abandonStaged();
            this.#stage(winner, true);
            continue;
          }
        }
        if (this.#deferForInline(staged.model, now)) break;
        this.#staged = null;
        this.#launch(staged.model, staged.lease, staged.version);
        continue;
      }
      const winner = this.#select(now);
      if (winner === undefined) break;
      this.#stage(winner);
    }
    this.#armWake(now);
    this.#notifyIdle();
  }

  /** Answers every queued request whose deadline has passed; O(expired) per model via the heap. */
  #dropExpired(now: number): void {
    // The copy (dropping may empty a model's queue and take it out of #withWork) only when
    // something has expired: nearly every pump finds nothing.
    let any = false;
    for (const st of this.#withWork) {
      const top = st.deadlines.peek();
      if (top !== undefined && top.deadline <= now) {
        any = true;
        break;
      }
    }
    if (!any) return;
    for (const st of [...this.#withWork]) {
      for (let top = st.deadlines.peek(); top !== undefined && top.deadline <= now; top = st.deadlines.peek()) {
        this.#dropQueued(
          top,
          'expired',
          new ServeError('HLO_ERR_DEADLINE_EXCEEDED', `model '${st.info.name}': deadline passed while queued`),
        );
      }
    }
  }

  #view(st: ModelState, now: number): QueueView {
    const front = st.queue.front!;
    // The front request's version decides the batch, and a batch never mixes versions. The front
    // is the oldest request queued, or a sub-call put ahead of it, which may run on a newer
    // version than the requests behind it: they keep theirs (each holds its version) and run next.
    const info = front.value.info;
    const scan = planScanRows(info.sizes, info.cap);
    const prefixRows: number[] = [];
    let rows = 0;
    let closed = false;
    // The list walked by hand: the queue's generator allocated an iterator and a result per node.
    for (let node: typeof front | null = front; node !== null; node = node.next) {
      if (node.value.key !== front.value.key || node.value.version !== front.value.version) {
        closed = true;
        break;
      }
      prefixRows.push(node.rows);
      rows += node.rows;
      if (rows >= scan) break;
    }
    // The window only waits for rows that could still join: a full batch, a run already cut by a
    // request of another shape, a model that cannot coalesce, or a draining shutdown dispatch now.
    if (info.windowMs <= 0 || !info.coalescable || rows >= scan || closed || this.#shutdown !== null) {
      return { prefixRows, ready: true, windowEndsAt: null };
    }
    const endsAt = front.value.arrival + info.windowMs;
    return endsAt <= now
      ? { prefixRows, ready: true, windowEndsAt: null }
      : { prefixRows, ready: false, windowEndsAt: endsAt };
  }

  #plan(st: ModelState, prefixRows: readonly number[]): BatchPlan {
    const info = st.queue.front!.value.info;
    return planBatch(
      prefixRows,
      info.sizes,
      info.cap,
      this.#costAware
        ? { coalescable: info.coalescable, measuredCost: st.measuredCost }
        : { coalescable: info.coalescable },
    );
  }

  #select(now: number): ModelState | undefined {
    const nowS = now / 1000;
    const fair = this.#discipline === 'fair';
    const totalEma = fair ? this.#ledger.total(nowS) : 0;
    // Shares are taken among the models that have work. The reference divides by every model's
    // weight, idle ones included: then every busy model can be over its share at once, a negative
    // deficit divided by a small cost ranks cheap models last, and an expensive model took 80-90 %
    // of the device from an equal-weight cheap one. Among busy models the shares sum to 1 and the
    // recent-compute fractions to at most 1, so some busy model is always at or under its share.
    let busyWeight = 0;
    if (fair) for (const st of this.#withWork) busyWeight += st.info.weight;
    const candidates = this.#candidates;
    candidates.length = 0;
    for (const st of this.#withWork) {
      const view = this.#view(st, now);
      if (!view.ready) continue;
      let priority = 0;
      if (fair) {
        const plan = this.#plan(st, view.prefixRows);
        const share = busyWeight > 0 ? st.info.weight / busyWeight : 0;
        const nema = totalEma > 0 ? this.#ledger.value(st, nowS) / totalEma : 0;
        const eff = effectiveCost(st.costs.estimate(plan.batchSize), plan.count, this.#discount);
        priority = fairPriority(share, nema, this.#cap, eff);
      }
      const c = this.#candidatePool[candidates.length] ?? this.#newCandidate(candidates.length);
      c.state = st;
      c.name = st.info.name;
      c.frontArrival = st.queue.front!.value.arrival;
      c.aheadFront = st.queue.front!.ahead;
      c.minDeadline = st.deadlines.peek()?.deadline ?? null;
      c.priority = priority;
      candidates.push(c);
    }
    const winner = selectCandidate(this.#discipline, candidates);
    return (this.#heldBack(winner, now) ? this.#bestReady(candidates) : undefined)?.state ?? winner?.state;
  }

  #newCandidate(i: number): Writable<Candidate> {
    const c: Writable<Candidate> = {
      state: undefined as unknown as ModelState,
      name: '',
      frontArrival: 0,
      aheadFront: false,
      minDeadline: null,
      priority: 0,
    };
    this.#candidatePool[i] = c;
    return c;
  }

  /** The winner is cold and young enough to wait behind a cache hit (coldHoldMs). */
  #heldBack(winner: Candidate | undefined, now: number): boolean {
    const isReady = this.#executor.isReady;
    if (winner === undefined || isReady === undefined || this.#coldHoldMs <= 0 || this.#discipline === 'edf') {
      return false;
    }
    return (
      now - winner.frontArrival < this.#coldHoldMs &&
      !isReady.call(this.#executor, winner.name, winner.state.queue.front!.value.version as V)
    );
  }

  #bestReady(candidates: readonly Candidate[]): Candidate | undefined {
    const ready = candidates.filter((c) => this.#executor.isReady!(c.name, c.state.queue.front!.value.version as V));
    return selectCandidate(this.#discipline, ready);
  }

  #stage(st: ModelState, rechosen = false): void {
    const version = st.queue.front!.value.version as V;
    const staged: Staged<L> = { model: st, version, lease: null, rechosen };
    this.#staged = staged;
    let prepared: Promise<L>;
    try {
      prepared = Promise.resolve(this.#executor.prepare(st.info.name, version));
    } catch (e) {
      prepared = Promise.reject(e);
    }
    prepared.then(
      (lease) => {
        if (this.#staged !== staged) {
          this.#release(lease);
          return;
        }
        staged.lease = lease;
        this.#schedulePump();
      },
      (e: unknown) => {
        if (this.#staged !== staged) return;
        this.#staged = null;
        this.#failPrepare(st, toServeError(e));
        this.#schedulePump();
      },
    );
  }

  #abandonStaged(): void {
    const staged = this.#staged;
    this.#staged = null;
    if (staged !== null && staged.lease !== null) this.#release(staged.lease);
  }

  /** Weights could not be made ready: the batch that would have run fails, later ones retry. */
  #failPrepare(st: ModelState, err: ServeError): void {
    if (st.removed || st.queue.length === 0) return;
    const plan = this.#plan(st, this.#view(st, this.clock.now()).prefixRows);
    st.counters.failedDispatches++;
    this.#logger.warn('scheduler: preparing model failed', { model: st.info.name, error: err.message });
    for (const r of st.queue.shift(plan.count)) {
      st.deadlines.remove(r);
      r.node = null;
      this.#countDrop(st, 'failed', err);
      this.#settle(r, err);
    }
    this.#afterDequeue(st);
  }

  #launch(st: ModelState, lease: L, version: unknown): void {
    // A lease prepared for another version (its requests left the queue meanwhile) is no use:
    // the next pump stages the front request's version.
    if (st.removed || st.queue.length === 0 || st.queue.front!.value.version !== version) {
      this.#release(lease);
      return;
    }
    const now = this.clock.now();
    const edf = this.#discipline === 'edf';
    let plan: BatchPlan;
    for (;;) {
      plan = this.#plan(st, this.#view(st, now).prefixRows);
      // EDF sheds what would finish late anyway (the cost estimate is the margin); the others drop
      // only what is already late. Dropping changes the queue, so plan again.
      const marginMs = edf ? st.costs.estimate(plan.batchSize) * 1000 : 0;
      let dropped = false;
      let node = st.queue.front;
      for (let i = 0; node !== null && i < plan.count; i++) {
        const r = node.value;
        node = node.next;
        const dl = r.deadline === Infinity ? null : r.deadline;
        if (cannotMeetDeadline(dl, now, marginMs)) {
          const late = dl !== null && now >= dl;
          this.#dropQueued(
            r,
            late ? 'expired' : 'shed',
            new ServeError(
              'HLO_ERR_DEADLINE_EXCEEDED',
              late
                ? `model '${st.info.name}': deadline passed while queued`
                : `model '${st.info.name}': cannot finish before its deadline (estimated ${marginMs.toFixed(1)} ms)`,
            ),
          );
          dropped = true;
        }
      }
      if (!dropped) break;
      if (st.queue.length === 0 || st.queue.front!.value.version !== version) {
        this.#release(lease);
        return;
      }
    }
    const taken = st.queue.shift(plan.count);
    for (const r of taken) {
      st.deadlines.remove(r);
      r.node = null;
      r.state = 'running';
    }
    this.#afterDequeue(st);
    this.#execute(st, lease, plan, taken, now);
  }

  #execute(st: ModelState, lease: L, plan: BatchPlan, taken: PendingRequest[], start: number): void {
    const name = st.info.name;
    const info = taken[0]!.info;
    const version = taken[0]!.version as V;
    const c = st.counters;
    const waits = taken.map((r) => (start - r.arrival) / 1000);
    for (let i = 0; i < taken.length; i++) {
      c.queueWaitSecondsTotal += waits[i]!;
      const t = taken[i]!.timing;
      if (t !== undefined) {
        t.queueSeconds = waits[i]!;
        t.batchSize = plan.batchSize;
        t.batchRows = plan.rows;
      }
    }
    c.queueWaitCount += taken.length;
    let inputs: HostTensor[];
    const pooled: Buffer[] = [];
    try {
      inputs = coalesceInputs(
        taken.map((r) => r.inputs),
        info.inputBatchAxes,
        plan.batchSize,
        this.#batchBuffers === null ? undefined : (bytes) => this.#takeBatchBuffer(bytes, pooled),
      );
    } catch (e) {
      this.#returnBatchBuffers(pooled);
      this.#release(lease);
      const err = toServeError(e);
      c.failedDispatches++;
      for (const r of taken) {
        this.#countDrop(st, 'failed', err);
        this.#settle(r, err);
      }
      return;
    }
    c.recordDispatch(plan.batchSize);
    this.#emit({
      type: 'dispatch',
      model: name,
      batchSize: plan.batchSize,
      requests: taken.length,
      rows: plan.rows,
      queueWaitSeconds: waits,
    });

    const mayRunInline =
      taken.length === 1 &&
      this.#inlineProbe === taken[0] &&
      this.#staged === null &&
      st.queue.length === 0 &&
      this.#inlineEligible(st, plan.batchSize);
    this.#inlineProbe = null;
    this.#executing++;
    st.inflightRequests += taken.length;
    // Count the dispatch's expected cost right away so that fair selection made while it runs
    // (prefetch, maxInflight > 1) already sees it; corrected to the measured time when it settles.
    // Only contended compute counts: device time a model used while no other model was waiting
    // took nothing from anyone, and charging it would starve that model once others arrive (a
    // model that ran alone for a second was held back for a second afterwards).
    const contended = this.#othersWaiting(st);
    const estimate = contended ? st.costs.estimate(plan.batchSize) : 0;
    if (contended) this.#ledger.add(st, estimate, start / 1000);
    const controller = this.#executor.cancellable === false ? null : new AbortController();
    let timedOut = false;
    let timer: TimerHandle | null = null;
    if (this.#timeoutSeconds > 0 && !mayRunInline) {
      timer = this.clock.setTimer(() => {
        timer = null;
        timedOut = true;
        c.dispatchTimeouts++;
        const err = new ServeError(
          'HLO_ERR_DEADLINE_EXCEEDED',
          `model '${name}': execution exceeded dispatch_timeout_seconds (${this.#timeoutSeconds} s)`,
        );
        for (const r of taken) {
          if (r.state !== 'running') continue;
          this.#countDrop(st, 'timeout', err);
          this.#settle(r, err);
        }
        this.#logger.warn('scheduler: dispatch timed out; callers answered, device work left to finish', {
          model: name,
          batchSize: plan.batchSize,
          timeoutSeconds: this.#timeoutSeconds,
        });
        this.#emit({
          type: 'dispatch-timeout',
          model: name,
          batchSize: plan.batchSize,
          requests: taken.length,
          timeoutSeconds: this.#timeoutSeconds,
        });
        controller?.abort(err);
      }, this.#timeoutSeconds * 1000);
    }

    const settle = (outputs: readonly HostTensor[] | null, failure: unknown): void => {
      if (timer !== null) this.clock.clearTimer(timer);
      const end = this.clock.now();
      const seconds = Math.max(0, (end - start) / 1000);
      this.#returnBatchBuffers(pooled);
      this.#release(lease);
      this.#executing--;
      st.inflightRequests -= taken.length;
      // A model removed meanwhile has left the ledger; re-adding it would leave a phantom share.
      if (!st.removed && contended) this.#ledger.add(st, seconds - estimate, end / 1000);
      c.computeSecondsTotal += seconds;
      let error: ServeError | undefined;
      if (outputs !== null && !timedOut) {
        // Only clean runs teach the cost model: a hung or failed run says nothing about the next one.
        st.costs.observe(plan.batchSize, seconds);
        let perRequest: HostTensor[][] | null = null;
        try {
          perRequest = sliceOutputs(
            outputs,
            info.outputBatchAxes,
            taken.map((r) => r.rows),
          );
        } catch (e) {
          error = toServeError(e);
        }
        if (perRequest !== null) {
          c.paddedRows += Math.max(0, plan.batchSize - plan.rows);
          for (let i = 0; i < taken.length; i++) {
            const r = taken[i]!;
            // A caller that cancelled mid-run was already answered; it is not counted as served.
            if (r.state !== 'running') continue;
            c.requestsServed++;
            c.rowsServed += r.rows;
            if (r.timing !== undefined) {
              r.timing.computeSeconds = seconds;
              r.timing.settledAt = end;
            }
            this.#settle(r, perRequest[i]!);
          }
        }
      } else if (!timedOut) {
        error = toServeError(failure);
      }
      if (error !== undefined) {
        c.failedDispatches++;
        this.#logger.warn('scheduler: execution failed', {
          model: name,
          batchSize: plan.batchSize,
          error: error.message,
        });
        for (const r of taken) {
          if (r.state !== 'running') continue;
          this.#countDrop(st, 'failed', error);
          this.#settle(r, error);
        }
      }
      if (timedOut) {
        this.#logger.warn('scheduler: timed-out dispatch returned', {
          model: name,
          batchSize: plan.batchSize,
          seconds,
        });
      }
      this.#emit({
        type: 'dispatch-done',
        model: name,
        batchSize: plan.batchSize,
        requests: taken.length,
        rows: plan.rows,
        computeSeconds: seconds,
        outcome: timedOut ? 'timed-out' : error !== undefined ? 'failed' : 'ok',
        ...(error !== undefined ? { error } : {}),
      });
      this.#schedulePump();
    };

    let running: Promise<readonly HostTensor[]>;
    try {
      running = Promise.resolve(
        this.#executor.execute({
          model: name,
          version,
          batchSize: plan.batchSize,
          rows: plan.rows,
          requests: taken.length,
          inputs,
          lease,
          signal: controller?.signal ?? NEVER_ABORTED,
          mayRunInline,
        }),
      );
    } catch (e) {
      running = Promise.reject(e);
    }
    running.then(
      (outputs) => settle(outputs, null),
      (e: unknown) => settle(null, e),
    );
  }

  // ---- helpers ------------------------------------------------------------------------------

  #takeBatchBuffer(bytes: number, taken: Buffer[]): Buffer {
    const b = this.#batchBuffers!.take(bytes);
    taken.push(b);
    return b;
  }

  /** The execution that read these has returned (or never started): they may be reused. */
  #returnBatchBuffers(buffers: readonly Buffer[]): void {
    for (const b of buffers) this.#batchBuffers!.give(b);
  }

  /** Nothing else executing, waiting or in the caller's hands, and the batch measured cheap. */
  #inlineEligible(st: ModelState, batchSize: number): boolean {
    const cost = st.costs.measured(batchSize);
    return (
      this.#aloneOutsideQueue !== null &&
      this.#executing === 0 &&
      cost !== undefined &&
      cost <= INLINE_MAX_SECONDS &&
      !this.#othersWaiting(st) &&
      this.#aloneOutsideQueue()
    );
  }

  /**
   * A lone cheap request about to run inline first waits one event-loop turn (setImmediate), in
   * which the loop reads what the sockets hold. Under load more requests are already there: it then
   * runs with them, coalesced, on the addon's threads. Run at once, it would be read, run and
   * answered before the next request was even seen, every request an execution of its own
   * (measured at 16 callers on one core: 1.3 rows per execution instead of 4.6, 0.65x the
   * throughput). True when the launch waits.
   */
  #deferForInline(st: ModelState, now: number): boolean {
    const front = st.queue.front?.value;
    if (front === undefined || this.#inlineProbe === front || st.queue.length !== 1) return false;
    const plan = this.#plan(st, this.#view(st, now).prefixRows);
    if (plan.count !== 1 || !this.#inlineEligible(st, plan.batchSize)) return false;
    this.#inlineProbe = front;
    setImmediate(this.#pumpSoon);
    return true;
  }

  #othersWaiting(st: ModelState): boolean {
    for (const other of this.#withWork) if (other !== st) return true;
    return false;
  }

  #require(queue: ModelQueue): ModelState {
    const st = queue as unknown as ModelState;
    if (st.removed) throw new ServeError('HLO_ERR_MODEL_NOT_FOUND', `model '${st.name}' was unloaded`);
    return st;
  }

  #seconds(): number {
    return this.clock.now() / 1000;
  }

  #onAbort(r: PendingRequest): void {
    const err = new ServeError('HLO_ERR_CANCELLED', 'request cancelled');
    if (r.state === 'queued') {
      this.#dropQueued(r, 'cancelled', err);
      this.#schedulePump();
    } else if (r.state === 'running') {
      // The batch runs on for the others; this caller just stops waiting.
      this.#countDrop(r.model, 'cancelled', err);
      this.#settle(r, err);
    }
  }

  #dropQueued(r: PendingRequest, reason: DropReason, err: ServeError): void {
    if (r.state !== 'queued') return;
    const st = r.model;
    if (r.node !== null) st.queue.remove(r.node);
    r.node = null;
    st.deadlines.remove(r);
    this.#afterDequeue(st);
    this.#countDrop(st, reason, err);
    this.#settle(r, err);
  }

  #afterDequeue(st: ModelState): void {
    if (st.queue.length === 0) this.#withWork.delete(st);
  }

  #countDrop(st: ModelState, reason: DropReason, err: ServeError): void {
    st.counters.dropped[reason]++;
    this.#emit({ type: 'request-dropped', model: st.info.name, reason, code: err.code });
  }

  #settle(r: PendingRequest, result: HostTensor[] | ServeError): void {
    if (r.state === 'settled') return;
    r.state = 'settled';
    if (r.onAbort !== null) r.signal?.removeEventListener('abort', r.onAbort);
    r.onAbort = null;
    if (result instanceof ServeError) r.reject(result);
    else r.resolve(result);
  }

  #release(lease: L): void {
    try {
      lease.release();
    } catch (e) {
      this.#logger.warn('scheduler: releasing a lease failed', { error: e instanceof Error ? e.message : String(e) });
    }
  }

  #emit(event: SchedulerEvent): void {
    if (this.#onEvent === undefined) return;
    try {
      this.#onEvent(event);
    } catch {
      // Observation must never break serving.
    }
  }

  /** One timer for the next instant something changes without an event: a deadline or a window. */
  #armWake(now: number): void {
    let at = Infinity;
    for (const st of this.#withWork) {
      const dl = st.deadlines.peek()?.deadline;
      if (dl !== undefined && dl < at) at = dl;
      if (st.info.windowMs > 0) {
        const w = this.#view(st, now).windowEndsAt;
        if (w !== null && w < at) at = w;
      }
    }
    if (at === this.#wakeAt) return;
    if (this.#wakeTimer !== null) this.clock.clearTimer(this.#wakeTimer);
    this.#wakeTimer = null;
    this.#wakeAt = at;
    if (at === Infinity) return;
    this.#wakeTimer = this.clock.setTimer(() => {
      this.#wakeTimer = null;
      this.#wakeAt = Infinity;
      this.#schedulePump();
    }, at - now);
  }

  #notifyIdle(): void {
    if (this.#idleWaiters.length === 0) return;
    if (this.#withWork.size > 0 || this.#executing > 0 || this.#staged !== null) return;
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    if (this.#wakeTimer !== null) this.clock.clearTimer(this.#wakeTimer);
    this.#wakeTimer = null;
    this.#wakeAt = Infinity;
    for (const w of waiters) w();
  }
}

function byName(a: { readonly name: string }, b: { readonly name: string }): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}
