/**
 * The body of one hook thread: imports bundle hook modules on first use and runs one exported
 * function per call, taken from a lane of the shared block (hook-lanes.ts) or from a message. It
 * holds no engine state; a thread that hangs or runs out of memory is terminated by the pool and
 * replaced.
 *
 * While lane calls are recent and nothing of its own is pending, the thread sleeps on the
 * doorbell word (Atomics.wait), so that the next call wakes it without an event loop turn; that
 * blocks its event loop, so the engine rings the doorbell after every message too, and the thread
 * goes back to its event loop whenever a message, a pending hook or idleness needs it. After a
 * lone call (one call in its sweep: a single caller's) it first polls the doorbell for a bounded
 * time, so that the engine's next call finds it awake and needs no notify; hook-spin.ts says for
 * how long and when not at all (a batch's calls, a slow model, a loaded machine).
 */
import { parentPort, workerData } from 'node:worker_threads';
import {
  errorData,
  type FromThread,
  type HookCallMessage,
  type HookContextData,
  type InspectMessage,
  type ToThread,
} from './hook-protocol.js';
import {
  DOORBELL,
  NOTED,
  SLEEPING,
  WAITING,
  epochMs,
  Lane,
  LaneBlock,
  MAIL,
  readLane,
  waitAsync,
  writeLane,
  type LaneCallRead,
} from './hook-lanes.js';
import { transferList, type HookTensors } from './hook-tensor.js';
import type { ThreadData } from './hook-pool.js';
import { SpinPolicy, spinWhile } from './hook-spin.js';
import { HookLog, type HookLogger } from './hook-log.js';
import { guardThreadBuffers } from '@hloserve/native/buffer-guard';
import { setThreadTimerSlack } from '@hloserve/native/timer-slack';

type HookFn = (tensors: HookTensors, ...rest: unknown[]) => unknown;
type Module = Record<string, unknown>;
const modules = new Map<string, Promise<Module>>();
/** Modules already imported, so that a lane call runs without waiting for a microtask. */
const loaded = new Map<string, Module>();
const pendingSubcalls = new Map<number, { resolve: (t: HookTensors) => void; reject: (e: Error) => void }>();
let nextSubId = 1;
/** Calls begun and not finished: while any is, the thread must not block its event loop. */
let pending = 0;
let mailSeen = 0;
let lastLaneCall = -Infinity;

/** How long after a lane call the thread keeps sleeping on the doorbell rather than its event loop. */
const HOT_MS = 20;
/** This thread's timer slack when it sleeps until just before a call it expects. */
const TIMER_SLACK_NS = 1000;

const port = parentPort;
if (!port) throw new Error('hook-thread runs only as a worker thread');
const { sab, lanes, laneBytes, spin: spinLimits, log: logSettings, maxBufferMb } = workerData as ThreadData;
// Before any hook runs: the typed arrays a hook allocates live outside the heap limit.
if (maxBufferMb !== null) guardThreadBuffers(maxBufferMb * 2 ** 20);
// A timed sleep before an expected call (hook-spin.ts) must end within its margin of a few tens
// of µs; the default slack (50 µs) is longer than that.
if ((spinLimits.wakeBeforeMs ?? 0) > 0) setThreadTimerSlack(TIMER_SLACK_NS);
const hookLog = new HookLog(logSettings);
const block = new LaneBlock({ lanes, laneBytes }, sab);
const spin = new SpinPolicy(spinLimits);

/**
 * Posts to the engine. A finished hook's results are moved; a sub-call's inputs are copied, since
 * the hook may use them again after the call (a detached buffer would surprise it). A result that
 * cannot be sent (a function, a Symbol, a Proxy: anything the clone refuses) becomes that call's
 * error; a sub-call that cannot be sent throws to the hook that made it.
 */
function send(msg: FromThread): void {
  if (msg.type !== 'result') return port!.postMessage(msg);
  try {
    port!.postMessage(msg, transferList(msg.tensors));
  } catch (e) {
    port!.postMessage({ type: 'error', id: msg.id, error: errorData(e) } satisfies FromThread);
  }
}

function load(url: string): Promise<Module> {
  let mod = modules.get(url);
  if (!mod) {
    mod = import(url) as Promise<Module>;
    modules.set(url, mod);
    mod.then(
      (m) => loaded.set(url, m),
      () => undefined,
    );
  }
  return mod;
}

/** What a hook sees as ctx: the call's context and its logger (made on first use). */
function hookContext(context: HookContextData): HookContextData & { readonly log: HookLogger } {
  let log: HookLogger | undefined;
  return {
    ...context,
    get log() {
      return (log ??= hookLog.logger(context.model, context.requestId));
    },
  };
}

async function inspect(msg: InspectMessage): Promise<void> {
  const mod = await load(msg.url);
  const functions = Object.keys(mod).filter((k) => typeof mod[k] === 'function');
  port!.postMessage({ type: 'exports', id: msg.id, functions } satisfies FromThread);
}

async function run(msg: HookCallMessage): Promise<void> {
  const fn = (await load(msg.url))[msg.fn];
  if (typeof fn !== 'function') throw new Error(`the hooks module exports no function "${msg.fn}"`);
  port!.postMessage({ type: 'started', id: msg.id } satisfies FromThread);
  const ctx = hookContext(msg.context);
  const call = (model: string, tensors: HookTensors): Promise<HookTensors> =>
    new Promise((resolve, reject) => {
      const subId = nextSubId++;
      pendingSubcalls.set(subId, { resolve, reject });
      try {
        send({ type: 'subcall', id: msg.id, subId, model, tensors });
      } catch (e) {
        pendingSubcalls.delete(subId);
        reject(e instanceof Error ? e : new Error(String(e)));
      }
    });
  const out = msg.fn === 'run' ? (fn as HookFn)(msg.tensors, call, ctx) : (fn as HookFn)(msg.tensors, ctx);
  send({ type: 'result', id: msg.id, tensors: (await out) as HookTensors });
}

port.on('message', (msg: ToThread) => {
  mailSeen++;
  if (msg.type === 'subresult') {
    const p = pendingSubcalls.get(msg.subId);
    pendingSubcalls.delete(msg.subId);
    if (!p) return;
    if (msg.ok) p.resolve(msg.tensors!);
    else p.reject(Object.assign(new Error(msg.error!.message), { name: msg.error!.name, code: msg.error!.code }));
    return;
  }
  pending++;
  const work = msg.type === 'inspect' ? inspect(msg) : run(msg);
  work.catch((e: unknown) => send({ type: 'error', id: msg.id, error: errorData(e) })).finally(() => pending--);
});

// ---- lane calls ---------------------------------------------------------------------------

/** Modules by the pool's number for them (lane headers carry it, and the URL only to be read once). */
const byModuleNumber = new Map<number, Module>();
const knowsModule = (module: number): boolean => byModuleNumber.has(module);

/** True while takeLanes runs the lanes of one wake-up: their note is sent when it is over. */
let sweeping = false;
/** The lane calls the last sweep took, and the kind of its last one. */
let swept = 0;
let sweptKind: LaneCallRead['fn'] = 'preprocess';
/** Lanes done since the last note was sent (or found already on its way). */
let noteOwed = false;
let noteQueued = false;

/**
 * Takes every requested lane and runs its hook; true when there was one. The calls of a burst
 * (hook-pool.ts) are all here when the doorbell wakes the thread, and their answers go back with
 * one note, so the engine wakes once and has them all together.
 */
function takeLanes(): boolean {
  sweeping = true;
  try {
    return sweep();
  } finally {
    sweeping = false;
    sendNote();
  }
}

function sweep(): boolean {
  swept = 0;
  for (let i = 0; i < block.lanes; i++) {
    if (!block.claim(i, Lane.Requested, Lane.Taken)) continue;
    swept++;
    const { header: read, tensors } = readLane(block.lane(i), knowsModule);
    const header = read!;
    sweptKind = header.fn;
    const mod = byModuleNumber.get(header.module) ?? loaded.get(header.url!);
    if (mod !== undefined) {
      byModuleNumber.set(header.module, mod);
      startLane(i, header, tensors, mod);
      continue;
    }
    pending++;
    load(header.url!).then(
      (m) => {
        pending--;
        byModuleNumber.set(header.module, m);
        startLane(i, header, tensors, m);
      },
      (e: unknown) => {
        pending--;
        answerByMessage(i, { type: 'error', id: header.id, error: errorData(e) });
      },
    );
  }
  return swept > 0;
}

function startLane(i: number, header: LaneCallRead, tensors: HookTensors, mod: Module): void {
  const fn = mod[header.fn];
  if (typeof fn !== 'function') {
    const e = new Error(`the hooks module exports no function "${header.fn}"`);
    answerByMessage(i, { type: 'error', id: header.id, error: errorData(e) });
    return;
  }
  block.startedAt[i] = epochMs();
  block.setState(i, Lane.Running);
  let out: unknown;
  let later: boolean;
  try {
    out = (fn as HookFn)(tensors, hookContext(header.context));
    // Reading `then` runs the hook's code too (a getter, a Proxy's trap).
    later = typeof (out as { then?: unknown } | null)?.then === 'function';
  } catch (e) {
    answerByMessage(i, { type: 'error', id: header.id, error: errorData(e) });
    return;
  }
  if (!later) return finishLane(i, header.id, out);
  pending++;
  // Promise.resolve adopts a thenable in a job of its own, where a `then` that throws rejects.
  Promise.resolve(out).then(
    (v) => {
      pending--;
      finishLane(i, header.id, v);
    },
    (e: unknown) => {
      pending--;
      answerByMessage(i, { type: 'error', id: header.id, error: errorData(e) });
    },
  );
}

function finishLane(i: number, id: number, result: unknown): void {
  let written: boolean;
  try {
    written = writeLane(block.lane(i), null, result);
  } catch (e) {
    // The result's own code threw while it was read (a getter, a Proxy): the hook failed.
    return answerByMessage(i, { type: 'error', id, error: errorData(e) });
  }
  if (!written) return answerByMessage(i, { type: 'result', id, tensors: result as HookTensors });
  block.setState(i, Lane.Done);
  // The engine waits for this lane on its own thread (its only call): it sees Done without a note.
  // Done is set before WAITING is read, and the engine clears WAITING before its last look.
  if (Atomics.load(block.words, WAITING) === 1) return;
  noteOwed = true;
  // Async hooks that finish in one microtask checkpoint are noted together too.
  if (!sweeping && !noteQueued) {
    noteQueued = true;
    queueMicrotask(sendNote);
  }
}

function sendNote(): void {
  noteQueued = false;
  if (!noteOwed) return;
  noteOwed = false;
  if (Atomics.compareExchange(block.words, NOTED, 0, 1) === 0)
    port!.postMessage({ type: 'lanes' } satisfies FromThread);
}

function answerByMessage(i: number, msg: FromThread): void {
  block.setState(i, Lane.Posted);
  send(msg);
}

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** The kind of the lone call last finished (none: null), and when (epoch ms, as LaneBlock.rungAt). */
let lone: LaneCallRead['fn'] | null = null;
let loneEnd = 0;
/** A lone call was just finished: poll before sleeping (once). */
let pollDue = false;

async function serveLanes(): Promise<void> {
  for (;;) {
    const bell = Atomics.load(block.words, DOORBELL);
    const seen = epochMs();
    if (takeLanes()) {
      lastLaneCall = performance.now();
      // How long after the last lone call the engine rang for the next: by the ring's own time,
      // not this thread's wake-up from it (a gap lengthened by each wake would keep a thread that
      // slept once from ever polling again); by the sweep's when lanes were taken before the ring.
      const rung = block.rungAt[0]!;
      if (lone !== null) spin.sawGap(lone, (rung >= loneEnd ? rung : seen) - loneEnd);
      lone = swept === 1 && pending === 0 ? sweptKind : null;
      loneEnd = epochMs();
      pollDue = lone !== null;
      // An async hook (or a module import) finishes on the event loop: give it a turn.
      if (pending > 0) await nextTurn();
      continue;
    }
    if (Atomics.load(block.words, MAIL) !== mailSeen) {
      await nextTurn();
      continue;
    }
    if (pollDue && pending === 0) {
      pollDue = false;
      const plan = spin.plan(lone!);
      // Rung while asleep: the call came sooner than the last gap said (the engine notified).
      if (plan.sleepMs > 0 && sleepUnlessRung(bell, plan.sleepMs)) continue;
      if (plan.pollMs > 0) {
        // SLEEPING stays 0: a ring now is a store the poll sees, with no notify.
        const end = spinWhile(block.words, DOORBELL, bell, plan.pollMs, spinLimits.preemptedMs);
        spin.ended(lone!, end);
        if (end === 'rung') continue;
      }
    }
    const cold = pending > 0 || performance.now() - lastLaneCall > HOT_MS;
    Atomics.store(block.words, SLEEPING, 1);
    if (Atomics.load(block.words, DOORBELL) === bell) {
      if (cold) {
        const w = waitAsync(block.words, DOORBELL, bell);
        if (w.async) await w.value;
      } else Atomics.wait(block.words, DOORBELL, bell, HOT_MS);
    }
    Atomics.store(block.words, SLEEPING, 0);
  }
}

/** Sleeps on the doorbell for up to `ms` as a sleeping thread (a ring notifies); true when rung. */
function sleepUnlessRung(bell: number, ms: number): boolean {
  Atomics.store(block.words, SLEEPING, 1);
  if (Atomics.load(block.words, DOORBELL) === bell) {
    const t = performance.now();
    if (Atomics.wait(block.words, DOORBELL, bell, ms) === 'timed-out') spin.sawLateSleep(performance.now() - t - ms);
  }
  Atomics.store(block.words, SLEEPING, 0);
  return Atomics.load(block.words, DOORBELL) !== bell;
}

void serveLanes();
