/**
 * Messages between the engine and a hook thread. A call names the module by URL and the export
 * to run; a meta model's `run` may ask the engine for sub-model calls while it runs (subcall /
 * subresult), answered on the same port.
 */
import type { HookTensors } from './hook-tensor.js';

export type HookFunction = 'preprocess' | 'postprocess' | 'run';

export interface HookContextData {
  readonly model: string;
  readonly requestId: string;
  readonly parameters: Readonly<Record<string, string | number | boolean>>;
  /** Absolute epoch milliseconds, or null. */
  readonly deadline: number | null;
}

export interface HookCallMessage {
  readonly type: 'call';
  readonly id: number;
  readonly url: string;
  readonly fn: HookFunction;
  readonly tensors: HookTensors;
  readonly context: HookContextData;
}

export interface SubResultMessage {
  readonly type: 'subresult';
  readonly id: number;
  readonly subId: number;
  readonly ok: boolean;
  readonly tensors?: HookTensors;
  readonly error?: HookErrorData;
}

/** Asks which functions a hooks module exports, so the pipeline knows its steps at load. */
export interface InspectMessage {
  readonly type: 'inspect';
  readonly id: number;
  readonly url: string;
}

export type ToThread = HookCallMessage | SubResultMessage | InspectMessage;

export interface HookErrorData {
  readonly name: string;
  readonly message: string;
  /** A hook may throw an error whose `code` is 'INVALID_ARGUMENT' to blame the request. */
  readonly code: string | null;
}

/**
 * What a thrown value says, as plain strings that always clone. Total: a hook may throw anything
 * (a Symbol, a Proxy whose traps throw, an object without a prototype, an Error whose message is
 * not a string), and failing to describe it must not take down the thread that caught it.
 */
export function errorData(e: unknown): HookErrorData {
  try {
    if (e instanceof Error) {
      const { name, message } = e as { name: unknown; message: unknown };
      const code: unknown = (e as { code?: unknown }).code;
      return {
        name: typeof name === 'string' ? name.slice(0, 100) : 'Error',
        message: valueText(message).slice(0, 1000),
        code: typeof code === 'string' ? code.slice(0, 100) : null,
      };
    }
    return { name: 'Error', message: `hook threw ${valueText(e).slice(0, 200)}`, code: null };
  } catch {
    return { name: 'Error', message: 'hook threw a value that cannot be read', code: null };
  }
}

/** String(x), or what x is when even that throws. */
export function valueText(x: unknown): string {
  try {
    return typeof x === 'string' ? x : String(x);
  } catch {
    return `a ${typeof x} that has no text`;
  }
}

export type FromThread =
  | { readonly type: 'result'; readonly id: number; readonly tensors: HookTensors }
  /** Lanes are done (hook-lanes.ts): their results are in the shared block. */
  | { readonly type: 'lanes' }
  | { readonly type: 'exports'; readonly id: number; readonly functions: readonly string[] }
  /** The module is loaded and the hook is about to run: its own time limit starts now. */
  | { readonly type: 'started'; readonly id: number }
  | { readonly type: 'error'; readonly id: number; readonly error: HookErrorData }
  | {
      readonly type: 'subcall';
      readonly id: number;
      readonly subId: number;
      readonly model: string;
      readonly tensors: HookTensors;
    };

/**
 * A message from a hook thread, or null when it is not one of ours. The thread's port is also the
 * hooks' (a hook may import node:worker_threads and post anything on parentPort): whatever is
 * not a well-formed protocol message is ignored rather than read as one. The tensors a message
 * carries are checked where they are used (checkHookTensors, checkCallTensors).
 */
export function fromThread(msg: unknown): FromThread | null {
  if (typeof msg !== 'object' || msg === null) return null;
  const m = msg as Record<string, unknown>;
  if (m.type === 'lanes') return m as FromThread;
  if (typeof m.id !== 'number') return null;
  switch (m.type) {
    case 'result':
    case 'started':
      return m as FromThread;
    case 'exports':
      return Array.isArray(m.functions) && m.functions.every((f) => typeof f === 'string') ? (m as FromThread) : null;
    case 'error':
      return isErrorData(m.error) ? (m as FromThread) : null;
    case 'subcall':
      return typeof m.subId === 'number' ? (m as FromThread) : null;
    default:
      return null;
  }
}

function isErrorData(e: unknown): e is HookErrorData {
  if (typeof e !== 'object' || e === null) return false;
  const d = e as Record<string, unknown>;
  return typeof d.name === 'string' && typeof d.message === 'string' && (d.code === null || typeof d.code === 'string');
}
