/**
 * A bounded pool of worker threads that run bundle hooks (preprocess, postprocess, a meta model's
 * run). Hooks never run on the dispatch loop. A thread holds several calls at once, so it never
 * idles through a round trip; it still runs them one after another (a hook is ordinary code on
 * the thread's event loop). Small numeric preprocess / postprocess calls go through a lane of
 * the thread's shared block (hook-lanes.ts); the rest, and answers that do not fit, by message.
 *
 * Calls made in one burst (one synchronous run of the engine and its microtasks: the requests of
 * a batch whose execution just settled, or requests answered together) are handed over together:
 * the lane calls of a burst go to one thread while it has lanes free, and its doorbell is rung
 * once at the end of the burst, so the thread wakes once, runs them all and sends one note back
 * (hook-thread.ts). Each call keeps its own lane, state and timer, so each still fails alone.
 * A hook that hangs or exhausts its heap stops its thread: the pool terminates it (the only way
 * to stop a synchronous loop), fails the call that had started, and sends the calls that had not
 * started to a fresh thread, so only the guilty request fails.
 */
import { Worker } from 'node:worker_threads';
import { SPIN_LIMITS, type SpinLimits } from './hook-spin.js';
import { HOOK_LOG_DEFAULTS, type HookLogSettings } from './hook-log.js';
import { buffersGuardFired, onBuffersGuardFired, releaseBuffersGuard } from '@hloserve/native/buffer-guard';
import { ServeError, invalidArgument, isErrorCode, type ErrorCode } from '@hloserve/common/errors';
import { clampTimerMs } from '@hloserve/common/timers';
import {
  errorData,
  fromThread,
  type FromThread,
  type HookContextData,
  type HookErrorData,
  type HookFunction,
  type ToThread,
} from './hook-protocol.js';
import type { HostTensor } from '../tensor.js';
import { toHookTensor, transferList, type HookTensor, type HookTensors } from './hook-tensor.js';
import {
  epochMs,
  Lane,
  LANE_BYTES,
  LaneBlock,
  MAIL,
  NOTED,
  readLane,
  WAITING,
  writeHostLane,
  writeLane,
  type LaneBlockShape,
  type LaneCall,
} from './hook-lanes.js';

export interface HookPoolOptions {
  /** Threads at most; each is started on first need. */
  readonly threads: number;
  /** Calls waiting for a thread at most; beyond, a call is refused with RESOURCE_EXHAUSTED. */
  readonly maxQueued: number;
  /** Heap limit per thread, MiB: a hook that allocates without bound fails alone. */
  readonly maxHeapMb: number;
  /**
   * Limit on the ArrayBuffers each thread holds, MiB (they live outside the heap): a hook that
   * keeps allocating typed arrays fails alone too (buffer-guard in @hloserve/native). None: unbounded.
   */
  readonly maxBufferMb?: number;
  /** Pool label in errors and logs. */
  readonly name: string;
  /** Calls sent to one thread before another is used; 1 runs strictly one at a time. */
  readonly perThread?: number;
  /**
   * How many requests the engine has in hand (decoding, queued, executing, in hooks, answering).
   * When it has one, and its call is the hand-over just made and the pool's only call, the event
   * loop has nothing to do until the thread answers: the engine then waits for the answer on its
   * own thread, within WAIT_MS, instead of sleeping until the thread's note wakes it
   * (bench/RESULTS.md, session 15: that wake-up and loop turn were about 10 µs of each hook's round
   * trip at c=1). Not for a batch's hand-over: at c=16 the engine spinning beside the hook thread
   * on two vCPUs measured slower than sleeping. Without it the engine never waits.
   */
  readonly engineInFlight?: () => number;
  /**
   * How long a thread polls its doorbell after a lone call before it sleeps (hook-spin.ts);
   * SPIN_LIMITS unless given (tests; NO_SPIN switches it off).
   */
  readonly spin?: SpinLimits;
  /** How the engine logs, for the hooks' ctx.log (hook-log.ts); info with no fields unless given. */
  readonly log?: HookLogSettings;
}

export interface HookCall {
  readonly url: string;
  readonly fn: HookFunction;
  /**
   * The engine's tensors in wire layout (a lane copies them straight from the request), or hook
   * tensors; made hook tensors (copied once) only for a call that goes by message.
   */
  readonly tensors: HookTensors | readonly HostTensor[];
  readonly context: HookContextData;
  /** The per-hook limit, ms; the request's own deadline (context.deadline) also applies. */
  readonly timeoutMs: number;
  /**
   * Other requests are in flight: the hand-over may wait for the end of this event-loop turn, so
   * that requests read from the sockets in the same turn join it (one wake-up for them all).
   * Without it the call is handed over at the end of its burst (microtasks), as a lone caller's
   * must be.
   */
  readonly gather?: boolean;
  /** For `run`: how a meta model's sub-model calls are served. */
  readonly subcall?: (model: string, tensors: HookTensors) => Promise<HookTensors>;
}

/** A call, or the question of what a module exports (answered with function names). */
type PoolCall = HookCall | (Omit<HookCall, 'fn' | 'tensors'> & { readonly fn: 'inspect' });

interface Pending {
  readonly call: PoolCall;
  readonly resolve: (result: never) => void;
  readonly reject: (e: Error) => void;
}

interface InFlight {
  readonly pending: Pending;
  timer: ReturnType<typeof setTimeout>;
  /** A message call: the thread said the hook began; from here a failure of the thread is this call's. */
  started: boolean;
  /** The lane the call went through, or -1 (by message). */
  readonly lane: number;
  /** When it was handed to the thread (epoch ms). */
  readonly sentAt: number;
}

interface Slot {
  worker: Worker;
  /** The worker's threadId, kept: a Worker reads -1 once its thread has exited. */
  threadId: number;
  /** The thread's shared block; a replaced thread gets a fresh one. */
  block: LaneBlock;
  /** Per lane, the id of the call it holds (which may have been answered already), or 0. */
  laneOwners: number[];
  readonly inflight: Map<number, InFlight>;
  /** The timer of #lookAgain, while one is armed. */
  lookAgain?: ReturnType<typeof setTimeout>;
}

const THREAD_URL = new URL('./hook-thread.js', import.meta.url);
/** How long a thread may take to start and import a hooks module before the hook runs. */
export const LOAD_TIMEOUT_MS = 30_000;
/**
 * Lanes per thread: a batch's requests fit on one thread (a batch of up to 16 requests is handed
 * over with one wake-up; the largest compiled batch of the examples, 32, with two).
 */
const DEFAULT_PER_THREAD = 16;
/**
 * How long the engine waits on its own thread for a lone call's answer before it leaves it to the
 * note (HookPoolOptions.engineInFlight). A pass-through hook's round trip to a sleeping thread
 * measured 15-30 µs on the 2-vCPU VM; the bound is what a loaded machine, where the thread waits
 * for a core, may cost per call, and is far below what an inline execution may hold the loop
 * (INLINE_MAX_SECONDS).
 */
export const WAIT_MS = 0.1;
/**
 * How often the engine looks at a thread's lanes while it holds several lane calls (#lookAgain):
 * a call done before a later one of the same sweep hangs is answered within about twice this, not
 * at the hang's limit.
 */
const LOOK_AGAIN_MS = 10;
/**
 * After a wait that ran out, the next hand-overs (1, then twice as many after each wait in a row
 * that runs out, up to this many) are left to the note: on a machine loaded enough that the thread
 * does not answer in time, waiting would cost the engine its bound in CPU each time.
 */
const WAIT_BACKOFF_MAX = 64;

/**
 * A thread started before any pool exists (HookPool.preload), and what it was started with; the
 * first pool to start a thread of that shape takes it.
 */
interface PreloadedThread {
  readonly worker: Worker;
  readonly block: LaneBlock;
  readonly setup: ThreadSetup;
  exited: boolean;
}
let preloaded: PreloadedThread | null = null;

/** What every thread of a pool is started with, besides its own block. */
export interface ThreadSetup {
  readonly maxHeapMb: number;
  /** The limit on its buffers, MiB; null: none. */
  readonly maxBufferMb: number | null;
  readonly log: HookLogSettings;
}

/** What a hook thread is started with. */
export interface ThreadData extends LaneBlockShape {
  readonly sab: SharedArrayBuffer;
  readonly spin: SpinLimits;
  readonly log: HookLogSettings;
  readonly maxBufferMb: number | null;
}

function spawnThread(block: LaneBlock, setup: ThreadSetup, spin: SpinLimits = SPIN_LIMITS): Worker {
  const { sab, lanes, laneBytes } = block;
  const w = new Worker(THREAD_URL, {
    resourceLimits: { maxOldGenerationSizeMb: setup.maxHeapMb, maxYoungGenerationSizeMb: 16 },
    workerData: { sab, lanes, laneBytes, spin, log: setup.log, maxBufferMb: setup.maxBufferMb } satisfies ThreadData,
  });
  // An idle hook thread must not keep the process alive.
  w.unref();
  return w;
}

export class HookPool {
  /**
   * Starts one hook thread now, for the first pool that needs a thread with `setup` and the
   * default lanes. A start whose repository has hooks calls this as soon as node.yaml is read: a
   * thread's start is mostly Node's own worker bootstrap (~40-60 ms of CPU), which then runs while
   * the JS thread still loads the engine, on a CPU that is otherwise idle then, instead of beside
   * the models' loads (bench/RESULTS.md, session 15). discardPreloaded() ends it if no pool took it.
   * Returns the thread's id (one preloaded thread at a time: a second call returns the first's).
   */
  static preload(setup: ThreadSetup): number {
    if (preloaded !== null) return preloaded.worker.threadId;
    const block = new LaneBlock({ lanes: DEFAULT_PER_THREAD, laneBytes: LANE_BYTES });
    const t: PreloadedThread = { worker: spawnThread(block, setup), block, setup, exited: false };
    // Until a pool takes it, a thread that fails to start is only noted: the pool starts its own.
    t.worker.on('error', () => undefined);
    t.worker.once('exit', () => (t.exited = true));
    preloaded = t;
    return t.worker.threadId;
  }

  /** Ends a preloaded thread no pool took (a start whose hooked models were not loaded). */
  static discardPreloaded(): void {
    const t = preloaded;
    preloaded = null;
    if (t !== null && !t.exited) void t.worker.terminate();
  }

  /** The preloaded thread, when it has this pool's shape and is alive; taken once. */
  #takePreloaded(): { worker: Worker; block: LaneBlock } | null {
    const t = preloaded;
    const shaped = t !== null && t.block.lanes === this.#perThread && sameSetup(t.setup, this.#setup);
    // The preloaded thread polls as SPIN_LIMITS says.
    if (t === null || t.exited || !shaped || (this.#opts.spin ?? SPIN_LIMITS) !== SPIN_LIMITS) return null;
    preloaded = null;
    return t;
  }

  readonly #opts: HookPoolOptions;
  readonly #setup: ThreadSetup;
  readonly #perThread: number;
  readonly #slots: Slot[] = [];
  readonly #queue: Pending[] = [];
  #nextId = 1;
  #closed = false;
  /** Each hooks module's number in lane headers: a thread that has it loaded reads no URL. */
  readonly #moduleIds = new Map<string, number>();
  /** Threads replaced after a timeout, a crash or a heap overflow (for metrics and tests). */
  restarts = 0;
  /** Hand-overs: a thread's doorbell rung for the calls of one burst (for benchmarks and tests). */
  handoffs = 0;
  /** Hand-overs that had to wake their thread (a notify); the rest found it polling (hook-spin.ts). */
  wakes = 0;
  /** Messages from a thread that were not the pool's protocol (a hook posting on parentPort), ignored. */
  strayMessages = 0;
  /** Notes from a thread that lane calls are done (each covers every lane done by then). */
  laneNotes = 0;
  /** The thread this burst's lane calls go to while it has lanes free; null between bursts. */
  #burstSlot: Slot | null = null;
  /** Threads whose doorbell is owed a ring at the end of this burst. */
  readonly #owed = new Set<Slot>();
  #ringQueued = false;
  #gatherQueued = false;
  /** Lane calls handed over since the last ring, and the first one's lane (#waitable). */
  #burstCalls = 0;
  #burstLane = -1;
  /** Hand-overs whose answers the engine read on its thread, with no note (benchmarks, tests). */
  waits = 0;
  /** Waits that ran out before the thread was done (benchmarks, tests). */
  waitsRunOut = 0;
  /** Hand-overs still to be left to the note because a recent wait ran out (WAIT_BACKOFF_MAX). */
  #waitSkips = 0;
  #waitBackoff = 0;
  readonly #ringOwed = (): void => {
    this.#ringQueued = false;
    this.#burstSlot = null;
    const waitOn = this.#waitable();
    const lane = this.#burstLane;
    this.#burstCalls = 0;
    // Said before the ring: a thread woken by it may be done before the ring returns.
    if (waitOn !== null) Atomics.store(waitOn.block.words, WAITING, 1);
    for (const s of this.#owed) {
      if (s.block.ring()) this.wakes++;
      this.handoffs++;
      if (s.inflight.size > 1) this.#lookAgain(s);
    }
    this.#owed.clear();
    if (waitOn !== null) this.#waitFor(waitOn, lane);
  };

  constructor(opts: HookPoolOptions) {
    if (!(opts.threads >= 1)) throw new RangeError('HookPool needs at least one thread');
    this.#opts = opts;
    this.#setup = {
      maxHeapMb: opts.maxHeapMb,
      maxBufferMb: opts.maxBufferMb ?? null,
      log: opts.log ?? HOOK_LOG_DEFAULTS,
    };
    this.#perThread = Math.max(1, opts.perThread ?? DEFAULT_PER_THREAD);
  }

  run(call: HookCall): Promise<HookTensors> {
    return this.#enqueue<HookTensors>(call);
  }

  /** The names of the functions a hooks module exports; loading it is the bundle's first check. */
  exportsOf(url: string, context: HookContextData, timeoutMs: number): Promise<string[]> {
    return this.#enqueue<string[]>({ url, fn: 'inspect', context, timeoutMs });
  }

  #enqueue<T>(call: PoolCall): Promise<T> {
    if (this.#closed) return Promise.reject(new ServeError('HLO_ERR_SHUTTING_DOWN', 'hook pool is closed'));
    return new Promise<T>((resolve, reject) => {
      const pending: Pending = { call, resolve: resolve as (r: never) => void, reject };
      const slot = this.#freeSlot(call);
      if (slot) this.#start(slot, pending);
      else if (this.#queue.length >= this.#opts.maxQueued)
        reject(
          new ServeError('HLO_ERR_OVERLOADED', `${this.#opts.name}: every hook thread is busy and the queue is full`),
        );
      else this.#queue.push(pending);
    });
  }

  /** Starts a thread if the pool has none, so that its first call does not wait for one to start. */
  prestart(): void {
    if (!this.#closed && this.#slots.length === 0) this.#addSlot();
  }

  get threadCount(): number {
    return this.#slots.length;
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const p of this.#queue.splice(0)) p.reject(new ServeError('HLO_ERR_SHUTTING_DOWN', 'hook pool is closing'));
    await Promise.all(this.#slots.splice(0).map((s) => this.#retire(s, 'hook pool is closing')));
  }

  /**
   * The thread this burst's lane calls went to while it has room; else the least busy thread with
   * room, or a new thread while there are fewer than allowed and none is idle. A module's load
   * check (`inspect`, one per hooked model as it loads) never starts a second thread: the imports
   * overlap on one thread, and a start with several hooked models pays for one thread's start
   * (Node's bootstrap: ~40 ms of CPU) instead of one per model; the next thread starts when calls
   * overlap.
   */
  #freeSlot(call?: PoolCall): Slot | null {
    const burst = this.#burstSlot;
    if (burst !== null && burst.inflight.size < this.#perThread) return burst;
    let best: Slot | null = null;
    for (const s of this.#slots) if (best === null || s.inflight.size < best.inflight.size) best = s;
    if (best !== null && (best.inflight.size === 0 || (call?.fn === 'inspect' && best.inflight.size < this.#perThread)))
      return best;
    if (this.#slots.length < this.#opts.threads) return this.#addSlot();
    return best !== null && best.inflight.size < this.#perThread ? best : null;
  }

  #addSlot(): Slot {
    const taken = this.#takePreloaded();
    const block = taken?.block ?? this.#newBlock();
    const worker = taken?.worker ?? this.#spawn(block);
    const slot: Slot = {
      worker,
      threadId: worker.threadId,
      block,
      laneOwners: new Array<number>(block.lanes).fill(0),
      inflight: new Map(),
    };
    this.#attach(slot);
    this.#slots.push(slot);
    return slot;
  }

  #newBlock(): LaneBlock {
    return new LaneBlock({ lanes: this.#perThread, laneBytes: LANE_BYTES });
  }

  #spawn(block: LaneBlock): Worker {
    return spawnThread(block, this.#setup, this.#opts.spin);
  }

  #attach(slot: Slot): void {
    const w = slot.worker;
    w.on('message', (raw: unknown) => {
      const msg = fromThread(raw);
      if (msg !== null) this.#onMessage(slot, w, msg);
      else this.strayMessages++;
    });
    // What a thread's uncaught throw leaves is whatever was thrown, not always an Error.
    w.on('error', (err: unknown) => {
      const data = errorData(err);
      const why =
        data.code === 'ERR_WORKER_OUT_OF_MEMORY'
          ? `ran out of its ${this.#setup.maxHeapMb} MiB heap`
          : `crashed: ${data.message.slice(0, 200)}`;
      this.#fail(slot, w, null, 'HLO_ERR_HOOK_FAILED', why);
    });
    // A thread past its buffer limit is held by its guard until terminated here (buffer-guard).
    const threadId = slot.threadId;
    const overBuffers = `held more than its ${this.#setup.maxBufferMb} MiB of buffers (hooks.max_buffer_mb)`;
    const unwatch = onBuffersGuardFired(threadId, () => {
      this.#fail(slot, w, null, 'HLO_ERR_HOOK_FAILED', overBuffers);
      releaseBuffersGuard(threadId);
    });
    w.on('exit', (code) => {
      unwatch();
      const why = buffersGuardFired(threadId) ? overBuffers : `thread exited (code ${code})`;
      this.#fail(slot, w, null, 'HLO_ERR_HOOK_FAILED', why);
    });
  }

  #start(slot: Slot, pending: Pending): void {
    const id = this.#nextId++;
    const { call } = pending;
    slot.worker.ref();
    if (call.fn === 'preprocess' || call.fn === 'postprocess') {
      const lane = slot.laneOwners.indexOf(0);
      if (lane >= 0 && this.#writeCall(slot, lane, id, call, call.fn)) {
        slot.laneOwners[lane] = id;
        const sentAt = epochMs();
        const f: InFlight = { pending, timer: undefined!, started: false, lane, sentAt };
        slot.inflight.set(id, f);
        // One timer stands for every limit: it wakes at the earliest that could have passed and
        // looks at the lane to see which applies (no message says when the hook started).
        const byDeadline = call.context.deadline === null ? Infinity : call.context.deadline - sentAt;
        f.timer = this.#armLane(slot, slot.worker, id, Math.min(call.timeoutMs, LOAD_TIMEOUT_MS, byDeadline));
        slot.block.setState(lane, Lane.Requested);
        if (this.#burstCalls++ === 0) this.#burstLane = lane;
        // Small numeric calls are cheap by nature: the rest of the burst joins them on this thread.
        // Calls by message (BYTES, large tensors: an image to decode) still spread over threads.
        this.#burstSlot = slot;
        this.#ringLater(slot, call.gather === true);
        return;
      }
    }
    // Until the thread says the hook started, the clock that runs is the load limit: the call may
    // wait behind others on its thread, and a fresh thread must start and import the module
    // first, which on a busy machine can take longer than a hook call may.
    const timer = this.#arm(slot, id, call, Math.max(call.timeoutMs, LOAD_TIMEOUT_MS), 'it did not start in time');
    slot.inflight.set(id, { pending, timer, started: false, lane: -1, sentAt: epochMs() });
    const msg: ToThread =
      call.fn === 'inspect'
        ? { type: 'inspect', id, url: call.url }
        : { type: 'call', id, url: call.url, fn: call.fn, tensors: hookTensorsOf(call.tensors), context: call.context };
    try {
      // Inputs are copied, not moved: a call its thread had not started when the thread was
      // replaced is sent again, so its tensors must still be here.
      this.#post(slot, msg);
    } catch (e) {
      this.#settle(slot, id, () =>
        pending.reject(invalidArgument(`hook input could not be sent: ${String(e).slice(0, 200)}`)),
      );
    }
  }

  #writeCall(slot: Slot, lane: number, id: number, call: HookCall, fn: 'preprocess' | 'postprocess'): boolean {
    let module = this.#moduleIds.get(call.url);
    if (module === undefined) {
      module = this.#moduleIds.size + 1;
      this.#moduleIds.set(call.url, module);
    }
    const header: LaneCall = { id, module, url: call.url, fn, context: call.context };
    const view = slot.block.lane(lane);
    return Array.isArray(call.tensors)
      ? writeHostLane(view, header, call.tensors as readonly HostTensor[])
      : writeLane(view, header, call.tensors);
  }

  /** Posts to the thread and rings its doorbell: a thread asleep on it must wake to read messages. */
  #post(slot: Slot, msg: ToThread, transfer: ArrayBuffer[] = []): void {
    slot.worker.postMessage(msg, transfer);
    // Counted once sent: a message that could not be cloned must not keep the thread looking for it.
    Atomics.add(slot.block.words, MAIL, 1);
    this.#ringLater(slot);
  }

  /**
   * Rings the thread's doorbell once the burst is over (a microtask queued behind the burst's
   * own): the calls written meanwhile are all there when the thread wakes, and the engine makes
   * one notify instead of one per call.
   */
  #ringLater(slot: Slot, gather = false): void {
    this.#owed.add(slot);
    if (gather) {
      // At the end of the turn's I/O (setImmediate), unless a burst's own ring comes first.
      if (this.#gatherQueued || this.#ringQueued) return;
      this.#gatherQueued = true;
      setImmediate(() => {
        this.#gatherQueued = false;
        if (this.#owed.size > 0) this.#ringOwed();
      });
      return;
    }
    if (this.#ringQueued) return;
    this.#ringQueued = true;
    queueMicrotask(this.#ringOwed);
  }

  /**
   * The thread whose hand-over the engine should wait for at this ring: the engine's one request
   * in hand made it, as one lane call, and the pool has no other call. Null when the event loop
   * may have something else to do, or a recent wait ran out.
   */
  #waitable(): Slot | null {
    const inHand = this.#opts.engineInFlight;
    if (this.#burstCalls !== 1 || inHand === undefined || this.#owed.size !== 1) return null;
    let slot: Slot | null = null;
    for (const s of this.#slots)
      if (s.inflight.size > 0) {
        if (slot !== null || s.inflight.size > 1) return null;
        slot = s;
      }
    if (slot === null || !this.#owed.has(slot) || inHand() > 1) return null;
    if (this.#waitSkips > 0) {
      this.#waitSkips--;
      return null;
    }
    return slot;
  }

  /**
   * Waits on the engine's thread, within WAIT_MS, for the lone lane call to be done, and answers
   * it at once: no note, no wake-up of the event loop, no loop turn. One not done by then is
   * answered by the thread's note as any other (WAITING is cleared before the last look).
   */
  #waitFor(slot: Slot, lane: number): void {
    const { block } = slot;
    const until = performance.now() + WAIT_MS;
    while (block.state(lane) < Lane.Done && performance.now() < until);
    Atomics.store(block.words, WAITING, 0);
    if (block.state(lane) >= Lane.Done) {
      this.#waitBackoff = 0;
      this.waits++;
      // Done is read here; an answer by message (Posted) comes by the event loop.
      return this.#harvest(slot);
    }
    this.waitsRunOut++;
    this.#waitBackoff = Math.min(WAIT_BACKOFF_MAX, Math.max(1, 2 * this.#waitBackoff));
    this.#waitSkips = this.#waitBackoff;
  }

  /**
   * Looks at the thread's lanes every LOOK_AGAIN_MS while it has lane calls in flight, and answers
   * those done once a hook has been running that long. A thread notes the calls of a sweep once
   * the sweep is over (one wake-up of the engine for a batch): a hook that hangs would otherwise
   * hold the answers of the calls before it until its limit ends its thread. A sweep that is
   * merely under way is left alone: answering part of a batch splits it (bench/RESULTS.md, session
   * 32: mlp at c=16 served 5-9 % fewer rows).
   */
  #lookAgain(slot: Slot): void {
    if (slot.lookAgain !== undefined) return;
    slot.lookAgain = setTimeout(() => {
      slot.lookAgain = undefined;
      const { block } = slot;
      const now = epochMs();
      let lanes = false;
      let stuck = false;
      for (const f of slot.inflight.values()) {
        if (f.lane < 0) continue;
        lanes = true;
        if (block.state(f.lane) === Lane.Running && now - block.startedAt[f.lane]! >= LOOK_AGAIN_MS) stuck = true;
      }
      if (stuck) this.#harvest(slot);
      if (lanes) this.#lookAgain(slot);
    }, LOOK_AGAIN_MS);
    // The calls' own timers keep the process alive while they wait; this one need not.
    slot.lookAgain.unref();
  }

  /** Whether the thread began the call's hook: from then on a failure of the thread is the call's. */
  #started(slot: Slot, f: InFlight): boolean {
    return f.lane < 0 ? f.started : slot.block.state(f.lane) >= Lane.Running;
  }

  /**
   * The timer of a lane call: at the earlier of the hook's limit counted from its start, the load
   * limit counted from when it was sent, and the request's deadline, the call fails as a message
   * call's timer would; before that it re-arms for what is left.
   */
  #armLane(slot: Slot, w: Worker, id: number, inMs: number): ReturnType<typeof setTimeout> {
    return setTimeout(() => {
      const f = slot.inflight.get(id);
      if (slot.worker !== w || f === undefined) return;
      // Done, its note not sent: the thread notes a burst's lanes together, and a later hook of
      // the burst may be the one that hangs.
      if (slot.block.state(f.lane) === Lane.Done) return this.#harvest(slot);
      const { call } = f.pending;
      const now = epochMs();
      const started = this.#started(slot, f);
      const limitAt = started
        ? slot.block.startedAt[f.lane]! + call.timeoutMs
        : f.sentAt + Math.max(call.timeoutMs, LOAD_TIMEOUT_MS);
      const deadline = call.context.deadline ?? Infinity;
      const due = Math.min(limitAt, deadline);
      if (now < due) {
        // Not started yet: look again no later than a hook that starts now would overrun.
        f.timer = this.#armLane(slot, w, id, clampTimerMs(Math.min(due, started ? due : now + call.timeoutMs) - now));
        return;
      }
      if (deadline <= limitAt)
        return this.#expire(slot, w, id, 'HLO_ERR_DEADLINE_EXCEEDED', 'the request deadline passed');
      const why = started ? `it ran past its ${call.timeoutMs} ms limit` : 'it did not start in time';
      this.#expire(slot, w, id, 'HLO_ERR_HOOK_FAILED', why);
    }, clampTimerMs(inMs));
  }

  /** Settles every lane call whose result is in its lane. */
  #harvest(slot: Slot): void {
    for (const [id, f, tensors] of this.#takeDone(slot))
      this.#settle(slot, id, () => f.pending.resolve(tensors as never));
  }

  /** Reads the results of the lane calls that are done and frees their lanes. */
  #takeDone(slot: Slot): [number, InFlight, HookTensors][] {
    const { block } = slot;
    const done: [number, InFlight, HookTensors][] = [];
    for (let lane = 0; lane < slot.laneOwners.length; lane++) {
      const id = slot.laneOwners[lane]!;
      if (id === 0 || block.state(lane) !== Lane.Done) continue;
      const f = slot.inflight.get(id);
      // An answered call's lane is freed all the same.
      if (f !== undefined) done.push([id, f, readLane(block.lane(lane)).tensors]);
      this.#freeLane(slot, lane);
    }
    return done;
  }

  #freeLane(slot: Slot, lane: number): void {
    slot.laneOwners[lane] = 0;
    slot.block.setState(lane, Lane.Free);
  }

  /** A timer that fails call `id` after `limitMs` or at the request's deadline, whichever is first. */
  #arm(slot: Slot, id: number, call: PoolCall, limitMs: number, why: string): ReturnType<typeof setTimeout> {
    // The scheduler's clock (epoch ms from performance.now()), which deadlines are written in.
    const now = performance.timeOrigin + performance.now();
    const byDeadline = call.context.deadline === null ? Infinity : call.context.deadline - now;
    const code: ErrorCode = byDeadline < limitMs ? 'HLO_ERR_DEADLINE_EXCEEDED' : 'HLO_ERR_HOOK_FAILED';
    const reason = code === 'HLO_ERR_DEADLINE_EXCEEDED' ? 'the request deadline passed' : why;
    const w = slot.worker;
    return setTimeout(() => this.#expire(slot, w, id, code, reason), clampTimerMs(Math.min(limitMs, byDeadline)));
  }

  /**
   * A call's time is up. One that had started, or that its thread was on (the oldest it holds:
   * it may be stuck importing the module), takes the thread with it; one still waiting behind
   * others just leaves (its answer is ignored if it ever comes).
   */
  #expire(slot: Slot, w: Worker, id: number, code: ErrorCode, why: string): void {
    const f = slot.inflight.get(id);
    if (slot.worker !== w || f === undefined) return;
    if (this.#started(slot, f) || slot.inflight.keys().next().value === id) return this.#fail(slot, w, id, code, why);
    // A lane call the thread has not taken leaves its lane; one it took keeps the lane until the
    // thread is done with it.
    if (f.lane >= 0 && slot.block.claim(f.lane, Lane.Requested, Lane.Free)) slot.laneOwners[f.lane] = 0;
    const where = `${f.pending.call.fn} hook of ${f.pending.call.context.model}`;
    this.#settle(slot, id, () => f.pending.reject(new ServeError(code, `${where} failed: ${why}`)));
  }

  #onMessage(slot: Slot, w: Worker, msg: FromThread): void {
    if (slot.worker !== w) return;
    if (msg.type === 'lanes') {
      this.laneNotes++;
      // Cleared before reading, so a lane done from here on sends a note of its own.
      Atomics.store(slot.block.words, NOTED, 0);
      return this.#harvest(slot);
    }
    if (msg.type === 'result' || msg.type === 'error') {
      // A lane call answered by message (an error, or a result too large for its lane).
      const lane = slot.laneOwners.indexOf(msg.id);
      if (lane >= 0) this.#freeLane(slot, lane);
    }
    const f = slot.inflight.get(msg.id);
    if (slot.worker !== w || f === undefined) return;
    const { pending } = f;
    if (msg.type === 'started') {
      clearTimeout(f.timer);
      f.started = true;
      const limit = pending.call.timeoutMs;
      f.timer = this.#arm(slot, msg.id, pending.call, limit, `it ran past its ${limit} ms limit`);
      return;
    }
    if (msg.type === 'subcall') {
      const sub = 'subcall' in pending.call ? pending.call.subcall : undefined;
      const answer = (m: ToThread): void => {
        if (slot.worker === w && slot.inflight.has(msg.id))
          this.#post(slot, m, m.type === 'subresult' && m.tensors ? transferList(m.tensors) : []);
      };
      if (!sub) {
        answer({
          type: 'subresult',
          id: msg.id,
          subId: msg.subId,
          ok: false,
          error: plainError('only run() may call models'),
        });
        return;
      }
      sub(msg.model, msg.tensors).then(
        (tensors) => answer({ type: 'subresult', id: msg.id, subId: msg.subId, ok: true, tensors }),
        (e: unknown) => answer({ type: 'subresult', id: msg.id, subId: msg.subId, ok: false, error: subcallError(e) }),
      );
      return;
    }
    // An answer of the other kind (a result to a load check, exports to a call) is not this call's.
    if ((msg.type === 'exports') !== (pending.call.fn === 'inspect') && msg.type !== 'error') return;
    if (msg.type === 'result') this.#settle(slot, msg.id, () => pending.resolve(msg.tensors as never));
    else if (msg.type === 'exports') this.#settle(slot, msg.id, () => pending.resolve(msg.functions as never));
    else this.#settle(slot, msg.id, () => pending.reject(this.#hookError(pending.call, msg.error)));
  }

  #hookError(call: PoolCall, e: HookErrorData): ServeError {
    const where = `${call.fn} hook of ${call.context.model}`;
    if (e.code === 'INVALID_ARGUMENT') return invalidArgument(`${where}: ${e.message}`);
    // A sub-call's own catalogue status passes through a meta model unchanged. Any other code a
    // hook sets is its own business: it must not become a status (or a metric label).
    if (isErrorCode(e.code)) return new ServeError(e.code, e.message);
    return new ServeError('HLO_ERR_HOOK_FAILED', `${where} threw ${e.name}: ${e.message}`);
  }

  #settle(slot: Slot, id: number, done: () => void): void {
    const f = slot.inflight.get(id);
    if (f) clearTimeout(f.timer);
    slot.inflight.delete(id);
    if (slot.inflight.size === 0) slot.worker.unref();
    done();
    this.#drainQueue();
  }

  #drainQueue(): void {
    // The queue is looked at first: asked with nothing queued, #freeSlot would start a thread
    // (every thread busy) that no call waits for.
    while (this.#queue.length > 0) {
      const slot = this.#freeSlot(this.#queue[0]!.call);
      if (slot === null) return;
      this.#start(slot, this.#queue.shift()!);
    }
  }

  /**
   * The thread failed or overran. Its started calls fail (`id`'s with this reason, other started
   * ones because their thread is gone); calls it had not started go to the front of the queue for
   * a fresh thread, since nothing of them ran.
   */
  #fail(slot: Slot, w: Worker, id: number | null, code: ErrorCode, why: string): void {
    if (slot.worker !== w || this.#closed) return;
    this.restarts++;
    void w.terminate();
    // Calls the thread finished before it failed are answered (their note may not have been sent).
    const answered = this.#takeDone(slot);
    for (const [cid, f] of answered) {
      clearTimeout(f.timer);
      slot.inflight.delete(cid);
    }
    // What had started is read from the old block before the thread gets a fresh one.
    const calls = [...slot.inflight.entries()].map(([cid, f]) => [cid, f, this.#started(slot, f)] as const);
    slot.inflight.clear();
    slot.block = this.#newBlock();
    slot.laneOwners = new Array<number>(slot.block.lanes).fill(0);
    slot.worker = this.#spawn(slot.block);
    slot.threadId = slot.worker.threadId;
    this.#attach(slot);
    // A thread that died with nothing started died on the call it was working on: the oldest.
    const guilty = id ?? (calls.some(([, , started]) => started) ? null : (calls[0]?.[0] ?? null));
    const retry: Pending[] = [];
    for (const [cid, f, started] of calls) {
      clearTimeout(f.timer);
      const where = `${f.pending.call.fn} hook of ${f.pending.call.context.model}`;
      if (cid === guilty) f.pending.reject(new ServeError(code, `${where} failed: ${why}`));
      else if (!started) retry.push(f.pending);
      else if (id === null) f.pending.reject(new ServeError(code, `${where} failed: ${why}`));
      else f.pending.reject(new ServeError('HLO_ERR_HOOK_FAILED', `${where} failed: its thread was replaced (${why})`));
    }
    for (const [, f, tensors] of answered) f.pending.resolve(tensors as never);
    this.#queue.unshift(...retry);
    this.#drainQueue();
  }

  async #retire(slot: Slot, why: string): Promise<void> {
    clearTimeout(slot.lookAgain);
    for (const f of slot.inflight.values()) {
      clearTimeout(f.timer);
      f.pending.reject(new ServeError('HLO_ERR_SHUTTING_DOWN', why));
    }
    slot.inflight.clear();
    await slot.worker.terminate();
  }
}

function hookTensorsOf(tensors: HookTensors | readonly HostTensor[]): HookTensors {
  if (!Array.isArray(tensors)) return tensors as HookTensors;
  const out: Record<string, HookTensor> = {};
  for (const t of tensors as readonly HostTensor[]) out[t.name] = toHookTensor(t);
  return out;
}

function plainError(message: string): HookErrorData {
  return { name: 'Error', message, code: null };
}

/** An engine error for a hook thread: a sub-call's ServeError keeps its code and whole message. */
function subcallError(e: unknown): HookErrorData {
  if (e instanceof ServeError) return { name: e.name, message: e.message, code: e.code };
  return errorData(e);
}

function sameSetup(a: ThreadSetup, b: ThreadSetup): boolean {
  return (
    a.maxHeapMb === b.maxHeapMb &&
    a.maxBufferMb === b.maxBufferMb &&
    a.log.level === b.log.level &&
    JSON.stringify(a.log.fields) === JSON.stringify(b.log.fields)
  );
}
