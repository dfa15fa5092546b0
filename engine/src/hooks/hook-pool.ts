/**
 * A bounded pool of worker threads that run bundle hooks (preprocess, postprocess, a meta model's
 * run). Hooks never run on the dispatch loop. Each thread runs one call at a time, so a hook that
 * hangs or exhausts its heap takes down only its own thread and its own request: the pool
 * terminates it (the only way to stop a synchronous loop) and starts a fresh one.
 */
import { Worker } from 'node:worker_threads';
import { ServeError, invalidArgument, type ErrorCode } from '@hloserve/common/errors';
import { clampTimerMs } from '@hloserve/common/timers';
import type { FromThread, HookContextData, HookErrorData, HookFunction, ToThread } from './hook-protocol.js';
import { transferList, type HookTensors } from './hook-tensor.js';

export interface HookPoolOptions {
  /** Threads at most; each is started on first need. */
  readonly threads: number;
  /** Calls waiting for a thread at most; beyond, a call is refused with RESOURCE_EXHAUSTED. */
  readonly maxQueued: number;
  /** Heap limit per thread, MiB: a hook that allocates without bound fails alone. */
  readonly maxHeapMb: number;
  /** Pool label in errors and logs. */
  readonly name: string;
}

export interface HookCall {
  readonly url: string;
  readonly fn: HookFunction;
  readonly tensors: HookTensors;
  readonly context: HookContextData;
  /** The per-hook limit, ms; the request's own deadline (context.deadline) also applies. */
  readonly timeoutMs: number;
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

interface Slot {
  worker: Worker;
  busy: { readonly id: number; readonly pending: Pending; timer: ReturnType<typeof setTimeout> } | null;
}

const THREAD_URL = new URL('./hook-thread.js', import.meta.url);
/** How long a thread may take to start and import a hooks module before the hook runs. */
export const LOAD_TIMEOUT_MS = 30_000;

export class HookPool {
  readonly #opts: HookPoolOptions;
  readonly #slots: Slot[] = [];
  readonly #queue: Pending[] = [];
  #nextId = 1;
  #closed = false;
  /** Threads replaced after a timeout, a crash or a heap overflow (for metrics and tests). */
  restarts = 0;

  constructor(opts: HookPoolOptions) {
    if (!(opts.threads >= 1)) throw new RangeError('HookPool needs at least one thread');
    this.#opts = opts;
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
      const slot = this.#idleSlot();
      if (slot) this.#start(slot, pending);
      else if (this.#queue.length >= this.#opts.maxQueued)
        reject(
          new ServeError('HLO_ERR_OVERLOADED', `${this.#opts.name}: every hook thread is busy and the queue is full`),
        );
      else this.#queue.push(pending);
    });
  }

  get threadCount(): number {
    return this.#slots.length;
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const p of this.#queue.splice(0)) p.reject(new ServeError('HLO_ERR_SHUTTING_DOWN', 'hook pool is closing'));
    await Promise.all(this.#slots.splice(0).map((s) => this.#retire(s, 'hook pool is closing')));
  }

  #idleSlot(): Slot | null {
    const idle = this.#slots.find((s) => s.busy === null);
    if (idle) return idle;
    if (this.#slots.length >= this.#opts.threads) return null;
    const slot: Slot = { worker: this.#spawn(), busy: null };
    this.#attach(slot);
    this.#slots.push(slot);
    return slot;
  }

  #spawn(): Worker {
    const w = new Worker(THREAD_URL, {
      resourceLimits: { maxOldGenerationSizeMb: this.#opts.maxHeapMb, maxYoungGenerationSizeMb: 16 },
    });
    // An idle hook thread must not keep the process alive.
    w.unref();
    return w;
  }

  #attach(slot: Slot): void {
    const w = slot.worker;
    w.on('message', (msg: FromThread) => this.#onMessage(slot, w, msg));
    w.on('error', (err: Error & { code?: string }) => {
      const why =
        err.code === 'ERR_WORKER_OUT_OF_MEMORY'
          ? `ran out of its ${this.#opts.maxHeapMb} MiB heap`
          : `crashed: ${err.message.slice(0, 200)}`;
      this.#fail(slot, w, 'HLO_ERR_HOOK_FAILED', why);
    });
    w.on('exit', (code) => this.#fail(slot, w, 'HLO_ERR_HOOK_FAILED', `thread exited (code ${code})`));
  }

  #start(slot: Slot, pending: Pending): void {
    const id = this.#nextId++;
    const { call } = pending;
    // Until the thread says the hook started, the clock that runs is the load limit: a fresh
    // thread (after a replacement) must start and import the module first, which on a busy
    // machine can take longer than a hook call may.
    const timer = this.#arm(slot, call, Math.max(call.timeoutMs, LOAD_TIMEOUT_MS), 'it did not start in time');
    slot.busy = { id, pending, timer };
    slot.worker.ref();
    const msg: ToThread =
      call.fn === 'inspect'
        ? { type: 'inspect', id, url: call.url }
        : { type: 'call', id, url: call.url, fn: call.fn, tensors: call.tensors, context: call.context };
    try {
      slot.worker.postMessage(msg, msg.type === 'call' ? transferList(msg.tensors) : []);
    } catch (e) {
      this.#settle(slot, () =>
        pending.reject(invalidArgument(`hook input could not be sent: ${String(e).slice(0, 200)}`)),
      );
    }
  }

  /** A timer that fails the slot's call after `limitMs` or at the request's deadline, whichever is first. */
  #arm(slot: Slot, call: PoolCall, limitMs: number, why: string): ReturnType<typeof setTimeout> {
    // The scheduler's clock (epoch ms from performance.now()), which deadlines are written in.
    const now = performance.timeOrigin + performance.now();
    const byDeadline = call.context.deadline === null ? Infinity : call.context.deadline - now;
    const code: ErrorCode = byDeadline < limitMs ? 'HLO_ERR_DEADLINE_EXCEEDED' : 'HLO_ERR_HOOK_FAILED';
    const reason = code === 'HLO_ERR_DEADLINE_EXCEEDED' ? 'the request deadline passed' : why;
    const w = slot.worker;
    return setTimeout(() => this.#fail(slot, w, code, reason), clampTimerMs(Math.min(limitMs, byDeadline)));
  }

  #onMessage(slot: Slot, w: Worker, msg: FromThread): void {
    const busy = slot.busy;
    if (slot.worker !== w || !busy || busy.id !== msg.id) return;
    const { pending } = busy;
    if (msg.type === 'started') {
      clearTimeout(busy.timer);
      const limit = pending.call.timeoutMs;
      busy.timer = this.#arm(slot, pending.call, limit, `it ran past its ${limit} ms limit`);
      return;
    }
    if (msg.type === 'subcall') {
      const sub = 'subcall' in pending.call ? pending.call.subcall : undefined;
      const answer = (m: ToThread): void => {
        if (slot.busy?.id === msg.id)
          w.postMessage(m, m.type === 'subresult' && m.tensors ? transferList(m.tensors) : []);
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
        (e: unknown) => answer({ type: 'subresult', id: msg.id, subId: msg.subId, ok: false, error: errorData(e) }),
      );
      return;
    }
    if (msg.type === 'result') this.#settle(slot, () => pending.resolve(msg.tensors as never));
    else if (msg.type === 'exports') this.#settle(slot, () => pending.resolve(msg.functions as never));
    else this.#settle(slot, () => pending.reject(this.#hookError(pending.call, msg.error)));
  }

  #hookError(call: PoolCall, e: HookErrorData): ServeError {
    const where = `${call.fn} hook of ${call.context.model}`;
    if (e.code === 'INVALID_ARGUMENT') return invalidArgument(`${where}: ${e.message}`);
    // A sub-call's own catalogue status passes through a meta model unchanged.
    if (e.code?.startsWith('HLO_ERR_')) return new ServeError(e.code as ErrorCode, e.message);
    return new ServeError('HLO_ERR_HOOK_FAILED', `${where} threw ${e.name}: ${e.message}`);
  }

  #settle(slot: Slot, done: () => void): void {
    const busy = slot.busy;
    if (busy) clearTimeout(busy.timer);
    slot.busy = null;
    slot.worker.unref();
    done();
    const next = this.#queue.shift();
    if (next) this.#start(slot, next);
  }

  /** The thread failed or overran: fail its call, replace the thread, keep serving the queue. */
  #fail(slot: Slot, w: Worker, code: ErrorCode, why: string): void {
    if (slot.worker !== w || this.#closed) return;
    const busy = slot.busy;
    this.restarts++;
    void w.terminate();
    slot.worker = this.#spawn();
    this.#attach(slot);
    if (!busy) return;
    const where = `${busy.pending.call.fn} hook of ${busy.pending.call.context.model}`;
    this.#settle(slot, () => busy.pending.reject(new ServeError(code, `${where} failed: ${why}`)));
  }

  async #retire(slot: Slot, why: string): Promise<void> {
    const busy = slot.busy;
    if (busy) {
      clearTimeout(busy.timer);
      busy.pending.reject(new ServeError('HLO_ERR_SHUTTING_DOWN', why));
    }
    slot.busy = null;
    await slot.worker.terminate();
  }
}

function plainError(message: string): HookErrorData {
  return { name: 'Error', message, code: null };
}

function errorData(e: unknown): HookErrorData {
  if (e instanceof ServeError) return { name: e.name, message: e.message, code: e.code };
  return {
    name: e instanceof Error ? e.name : 'Error',
    message: e instanceof Error ? e.message : String(e),
    code: null,
  };
}
