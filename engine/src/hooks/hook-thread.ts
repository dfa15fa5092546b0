/**
 * The body of one hook thread: imports bundle hook modules on first use and runs one exported
 * function per call message. It holds no engine state; a thread that hangs or runs out of memory
 * is terminated by the pool and replaced.
 */
import { parentPort } from 'node:worker_threads';
import type { FromThread, HookCallMessage, HookErrorData, InspectMessage, ToThread } from './hook-protocol.js';
import { transferList, type HookTensors } from './hook-tensor.js';

type HookFn = (tensors: HookTensors, ...rest: unknown[]) => unknown;
const modules = new Map<string, Promise<Record<string, unknown>>>();
const pendingSubcalls = new Map<number, { resolve: (t: HookTensors) => void; reject: (e: Error) => void }>();
let nextSubId = 1;

const port = parentPort;
if (!port) throw new Error('hook-thread runs only as a worker thread');

function send(msg: FromThread): void {
  // A finished hook's results are moved; a sub-call's inputs are copied, since the hook may use
  // them again after the call (a detached buffer would surprise it).
  const move = msg.type === 'result' ? transferList(msg.tensors) : [];
  try {
    port!.postMessage(msg, move);
  } catch (e) {
    // A result that cannot be cloned (a function, a class instance) becomes that call's error.
    if (msg.type === 'result')
      port!.postMessage({ type: 'error', id: msg.id, error: errorData(e) } satisfies FromThread);
    else throw e;
  }
}

function errorData(e: unknown): HookErrorData {
  if (e instanceof Error) {
    const code = (e as { code?: unknown }).code;
    return { name: e.name, message: e.message.slice(0, 1000), code: typeof code === 'string' ? code : null };
  }
  return { name: 'Error', message: `hook threw ${String(e).slice(0, 200)}`, code: null };
}

function load(url: string): Promise<Record<string, unknown>> {
  let mod = modules.get(url);
  if (!mod) {
    mod = import(url) as Promise<Record<string, unknown>>;
    modules.set(url, mod);
  }
  return mod;
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
  const ctx = {
    ...msg.context,
    log: (...args: unknown[]) => console.log(`[hook ${msg.context.model}]`, ...args),
  };
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
  if (msg.type === 'subresult') {
    const p = pendingSubcalls.get(msg.subId);
    pendingSubcalls.delete(msg.subId);
    if (!p) return;
    if (msg.ok) p.resolve(msg.tensors!);
    else p.reject(Object.assign(new Error(msg.error!.message), { name: msg.error!.name, code: msg.error!.code }));
    return;
  }
  const work = msg.type === 'inspect' ? inspect(msg) : run(msg);
  work.catch((e: unknown) => send({ type: 'error', id: msg.id, error: errorData(e) }));
});
