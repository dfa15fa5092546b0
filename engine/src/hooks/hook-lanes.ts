/**
 * The shared control block between the engine and one hook thread: the fast path for small
 * preprocess / postprocess calls. The engine writes the call into a lane of a SharedArrayBuffer
 * and rings a doorbell word that the thread sleeps on (Atomics.wait, no event loop turn); the
 * thread writes the result back into the lane and sends the engine one small note for every lane
 * done until the engine reads them (a message: the engine's event loop must wake anyway, and
 * Atomics.waitAsync on the engine's side measured slower than a message under load). Calls that
 * do not fit a lane, carry BYTES, or are a meta model's run (which talks back) use messages.
 *
 * Layout: Int32 words [doorbell, noted, mail, sleeping, waiting, state of lane 0..n-1], then one
 * Float64 for when the doorbell was last rung and one per lane for when its hook started (both
 * epoch ms), then the lanes' bytes. A lane holds a call header
 * (binary, length-prefixed; none in an answer) followed by the tensors' bytes, each at an 8-byte
 * aligned offset. The header is binary, not JSON: on a hook thread just woken, JSON.parse of
 * the call's URL and context was half the cost of reading a lane.
 */
import { noParams } from '@hloserve/common/wire';
import { DTYPE_BYTES } from '@hloserve/native/dtype';
import type { HostTensor, TensorDType } from '../tensor.js';
import type { HookContextData } from './hook-protocol.js';
import { arrayTypeFor, type HookTensor, type HookTensors, type NumericArray } from './hook-tensor.js';

/** Rung (incremented, and notified if the thread sleeps) by the engine after it fills a lane or posts a message. */
export const DOORBELL = 0;
/** 1 while a note that lanes are done is on its way to the engine: one note covers every lane done meanwhile. */
export const NOTED = 1;
/** Messages the engine has posted to the thread: the thread leaves its wait to read them. */
export const MAIL = 2;
/** 1 while the thread sleeps on the doorbell: only then does ringing it cost a wake-up. */
export const SLEEPING = 3;
/**
 * 1 while the engine waits on its own thread for a lone call's answer (HookPool, engineInFlight):
 * the thread then sends no note for the lane it finishes, and the engine reads it when it turns
 * Done. The engine clears the word before its last look at the lane, and the thread sets Done
 * before it reads the word (both sequentially consistent), so a lane is either seen or noted.
 */
export const WAITING = 4;
const STATE0 = 5;

/** A lane's state word. */
export const Lane = {
  Free: 0,
  /** The engine wrote a call; the thread has not taken it. */
  Requested: 1,
  /** The thread took it and is loading the module: not started, so it may be sent again. */
  Taken: 2,
  /** The hook began (its start time is written): from here a thread failure is this call's. */
  Running: 3,
  /** The result is in the lane. */
  Done: 4,
  /** The answer went by message (an error, or a result that does not fit a lane). */
  Posted: 5,
} as const;
export type Lane = (typeof Lane)[keyof typeof Lane];

export const LANE_BYTES = 64 * 1024;

export interface LaneBlockShape {
  readonly lanes: number;
  readonly laneBytes: number;
}

/** Both sides' views of one block. */
export class LaneBlock {
  readonly sab: SharedArrayBuffer;
  readonly words: Int32Array;
  readonly startedAt: Float64Array;
  /**
   * When the engine last rang the doorbell (epoch ms, the same reading on both threads): the
   * thread measures the gap from its last call to the next with it, so that a gap is the engine's
   * and not lengthened by the thread's own wake-up when it slept (hook-spin.ts).
   */
  readonly rungAt: Float64Array;
  readonly bytes: Uint8Array;
  readonly lanes: number;
  readonly laneBytes: number;
  readonly #dataStart: number;

  constructor(shape: LaneBlockShape, sab?: SharedArrayBuffer) {
    this.lanes = shape.lanes;
    this.laneBytes = shape.laneBytes;
    const wordsBytes = align8(4 * (STATE0 + shape.lanes));
    this.#dataStart = wordsBytes + 8 * (1 + shape.lanes);
    this.sab = sab ?? new SharedArrayBuffer(this.#dataStart + shape.lanes * shape.laneBytes);
    this.words = new Int32Array(this.sab, 0, STATE0 + shape.lanes);
    this.rungAt = new Float64Array(this.sab, wordsBytes, 1);
    this.startedAt = new Float64Array(this.sab, wordsBytes + 8, shape.lanes);
    this.bytes = new Uint8Array(this.sab);
  }

  state(lane: number): Lane {
    return Atomics.load(this.words, STATE0 + lane) as Lane;
  }

  setState(lane: number, s: Lane): void {
    Atomics.store(this.words, STATE0 + lane, s);
  }

  /** Moves lane from `from` to `to` unless someone else moved it first; true when it moved. */
  claim(lane: number, from: Lane, to: Lane): boolean {
    return Atomics.compareExchange(this.words, STATE0 + lane, from, to) === from;
  }

  /**
   * Rings the doorbell. Notifying costs a system call and contends on V8's global wait list, so
   * it is done only when the thread said it sleeps (it sets SLEEPING before it re-reads the
   * doorbell and waits; both sides' accesses are sequentially consistent, so one of them sees
   * the other's write and no wake-up is lost). A thread polling the doorbell (hook-spin.ts) has
   * not said it sleeps, so ringing it costs no notify. True when it notified.
   */
  ring(): boolean {
    // Written before the doorbell's sequentially consistent add: a thread that sees the ring sees it.
    this.rungAt[0] = epochMs();
    Atomics.add(this.words, DOORBELL, 1);
    if (Atomics.load(this.words, SLEEPING) !== 1) return false;
    Atomics.notify(this.words, DOORBELL);
    return true;
  }

  readonly #views: LaneView[] = [];

  /** The lane's bytes, with the views that read and write them (made once per lane). */
  lane(lane: number): LaneView {
    let v = this.#views[lane];
    if (v === undefined) {
      const at = this.#dataStart + lane * this.laneBytes;
      const bytes = this.bytes.subarray(at, at + this.laneBytes);
      v = {
        bytes,
        buf: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
        view: new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength),
      };
      this.#views[lane] = v;
    }
    return v;
  }
}

/** One lane's bytes seen three ways. */
export interface LaneView {
  readonly bytes: Uint8Array;
  readonly buf: Buffer;
  readonly view: DataView;
}

/** Makes a LaneView of any bytes (tests, and a lane of a block not at hand). */
export function laneView(bytes: Uint8Array): LaneView {
  return {
    bytes,
    buf: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
    view: new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength),
  };
}

/** A preprocess / postprocess call as its lane carries it. */
export interface LaneCall {
  readonly id: number;
  /** The pool's number for the module's URL: a thread that knows it does not read the URL. */
  readonly module: number;
  readonly url: string;
  readonly fn: 'preprocess' | 'postprocess';
  readonly context: HookContextData;
}

/** What the thread reads of a call; `url` is null when `knowsModule` said it need not be read. */
export interface LaneCallRead extends Omit<LaneCall, 'url'> {
  readonly url: string | null;
}

const FN_CODES = ['preprocess', 'postprocess'] as const;
/** deadline f64, id u32, module u32, fn u8 + pad, then four u16 byte lengths: url, model, request id, parameters. */
const CALL_FIXED = 8 + 4 + 4 + 4 + 4 * 2;

type WaitAsync = (
  words: Int32Array,
  index: number,
  value: number,
) => { readonly async: false; readonly value: string } | { readonly async: true; readonly value: Promise<string> };

/** Atomics.waitAsync (Node 16+; newer than the TypeScript lib this project targets). */
export const waitAsync: WaitAsync = (Atomics as unknown as { waitAsync: WaitAsync }).waitAsync;

/** Epoch milliseconds, the same reading on every thread (deadlines are written in it). */
export function epochMs(): number {
  return performance.timeOrigin + performance.now();
}

/** Numeric dtypes by their code in a lane's tensor table. */
const CODES: readonly Exclude<TensorDType, 'BYTES'>[] = [
  'bool',
  'u8',
  'i8',
  'i16',
  'u16',
  'f16',
  'bf16',
  'i32',
  'u32',
  'f32',
  'f64',
  'i64',
  'u64',
];
const CODE_OF = new Map<string, number>(CODES.map((d, i) => [d, i]));
/** One table entry before its dims and name: name length, code, rank, data offset, byte length. */
const ENTRY = 16;

/** One tensor to write: its name, dtype, shape and bytes. */
interface Entry {
  readonly name: string;
  readonly code: number;
  readonly shape: readonly number[];
  readonly bytes: Uint8Array;
}

/**
 * Writes a call's header (null writes none) and a hook's `tensors` into a lane; false (nothing is
 * promised about the lane's bytes) when a tensor is not a plain numeric one of its dtype's array
 * type or the whole does not fit. The tensor table is binary: JSON for it cost more than the copies.
 */
export function writeLane(lane: LaneView, header: LaneCall | null, tensors: unknown): boolean {
  const entries = hookEntries(tensors);
  return entries !== null && writeEntries(lane, header, entries);
}

/**
 * writeLane for the engine's own tensors (wire layout, already checked): copied straight from
 * the request's bytes, aligned or not, with no typed array made for them first. False for BYTES
 * or when they do not fit.
 */
export function writeHostLane(lane: LaneView, header: LaneCall | null, tensors: readonly HostTensor[]): boolean {
  const entries = hostEntries(tensors);
  return entries !== null && writeEntries(lane, header, entries);
}

function writeEntries(lane: LaneView, header: LaneCall | null, entries: readonly Entry[]): boolean {
  let tableBytes = 0;
  let dataBytes = 0;
  for (const e of entries) {
    tableBytes += ENTRY + 8 * e.shape.length + align8(3 * e.name.length);
    dataBytes += align8(e.bytes.byteLength);
  }
  const { buf, view, bytes } = lane;
  let headMax = 0;
  let params = '';
  if (header !== null) {
    const c = header.context;
    params = noParams(c.parameters) ? '' : JSON.stringify(c.parameters);
    // UTF-8 may take up to 3 bytes per UTF-16 unit; each length must fit its u16.
    headMax = CALL_FIXED + 3 * (header.url.length + c.model.length + c.requestId.length + params.length);
    if (Math.max(header.url.length, c.model.length, c.requestId.length, params.length) * 3 > 0xffff) return false;
  }
  if (align8(8 + headMax) + tableBytes + dataBytes > bytes.byteLength) return false;
  const headBytes = header === null ? 0 : writeCall(buf, view, header, params);
  view.setUint32(0, headBytes, true);
  view.setUint32(4, entries.length, true);
  let at = align8(8 + headBytes);
  let data = at + tableBytes;
  for (const e of entries) {
    const nameBytes = buf.write(e.name, at + ENTRY + 8 * e.shape.length, 'utf8');
    view.setUint32(at, nameBytes, true);
    view.setUint8(at + 4, e.code);
    view.setUint8(at + 5, e.shape.length);
    view.setUint32(at + 8, data, true);
    view.setUint32(at + 12, e.bytes.byteLength, true);
    for (let k = 0; k < e.shape.length; k++) view.setFloat64(at + ENTRY + 8 * k, e.shape[k]!, true);
    at += ENTRY + 8 * e.shape.length + align8(nameBytes);
    bytes.set(e.bytes, data);
    data += align8(e.bytes.byteLength);
  }
  return true;
}

function hookEntries(tensors: unknown): Entry[] | null {
  if (typeof tensors !== 'object' || tensors === null || Array.isArray(tensors)) return null;
  const out: Entry[] = [];
  for (const name in tensors) {
    if (!Object.prototype.hasOwnProperty.call(tensors, name)) continue;
    const t = (tensors as Record<string, unknown>)[name] as Partial<HookTensor> | null;
    if (typeof t !== 'object' || t === null || typeof t.dtype !== 'string') return null;
    const code = CODE_OF.get(t.dtype);
    if (code === undefined || !(t.data instanceof arrayTypeFor(t.dtype)!) || !Array.isArray(t.shape)) return null;
    if (t.shape.length > 255 || !t.shape.every((d) => Number.isSafeInteger(d))) return null;
    const d = t.data as NumericArray;
    out.push({ name, code, shape: t.shape, bytes: new Uint8Array(d.buffer, d.byteOffset, d.byteLength) });
  }
  return out;
}

function hostEntries(tensors: readonly HostTensor[]): Entry[] | null {
  const out: Entry[] = [];
  for (const t of tensors) {
    const code = CODE_OF.get(t.dtype);
    if (code === undefined || t.shape.length > 255) return null;
    out.push({ name: t.name, code, shape: t.shape, bytes: t.data });
  }
  return out;
}

function writeCall(buf: Buffer, view: DataView, h: LaneCall, params: string): number {
  const c = h.context;
  view.setFloat64(8, c.deadline ?? NaN, true);
  view.setUint32(16, h.id, true);
  view.setUint32(20, h.module, true);
  view.setUint8(24, h.fn === 'preprocess' ? 0 : 1);
  let at = 8 + CALL_FIXED;
  const put = (text: string, slot: number): void => {
    const n = text.length === 0 ? 0 : buf.write(text, at, 'utf8');
    view.setUint16(28 + 2 * slot, n, true);
    at += n;
  };
  put(h.url, 0);
  put(c.model, 1);
  put(c.requestId, 2);
  put(params, 3);
  return at - 8;
}

function readCall(buf: Buffer, view: DataView, knowsModule: (module: number) => boolean): LaneCallRead {
  const deadline = view.getFloat64(8, true);
  const id = view.getUint32(16, true);
  const module = view.getUint32(20, true);
  const fn = FN_CODES[view.getUint8(24)]!;
  let at = 8 + CALL_FIXED;
  const take = (slot: number, skip = false): string | null => {
    const n = view.getUint16(28 + 2 * slot, true);
    const text = skip ? null : n === 0 ? '' : buf.toString('utf8', at, at + n);
    at += n;
    return text;
  };
  const url = take(0, knowsModule(module));
  const model = take(1)!;
  const requestId = take(2)!;
  const params = take(3)!;
  const parameters = params === '' ? {} : (JSON.parse(params) as HookContextData['parameters']);
  return {
    id,
    module,
    url,
    fn,
    context: { model, requestId, parameters, deadline: Number.isNaN(deadline) ? null : deadline },
  };
}

/**
 * Reads a lane written by writeLane; every tensor is copied out into an ArrayBuffer of its own.
 * `knowsModule` says whether the call's module URL need not be read (default: read it).
 */
export function readLane(
  lane: LaneView,
  knowsModule: (module: number) => boolean = () => false,
): { header: LaneCallRead | null; tensors: HookTensors } {
  const { buf, view, bytes } = lane;
  const headBytes = view.getUint32(0, true);
  const count = view.getUint32(4, true);
  const header = headBytes === 0 ? null : readCall(buf, view, knowsModule);
  const tensors: Record<string, HookTensor> = {};
  let at = align8(8 + headBytes);
  for (let i = 0; i < count; i++) {
    const nameBytes = view.getUint32(at, true);
    const dtype = CODES[view.getUint8(at + 4)]!;
    const rank = view.getUint8(at + 5);
    const offset = view.getUint32(at + 8, true);
    const byteLength = view.getUint32(at + 12, true);
    const shape: number[] = [];
    for (let k = 0; k < rank; k++) shape.push(view.getFloat64(at + ENTRY + 8 * k, true));
    const nameAt = at + ENTRY + 8 * rank;
    const name = buf.toString('utf8', nameAt, nameAt + nameBytes);
    at = nameAt + align8(nameBytes);
    const own = new Uint8Array(byteLength);
    own.set(bytes.subarray(offset, offset + byteLength));
    tensors[name] = { dtype, shape, data: new (arrayTypeFor(dtype)!)(own.buffer, 0, byteLength / DTYPE_BYTES[dtype]) };
  }
  return { header, tensors };
}

function align8(n: number): number {
  return (n + 7) & ~7;
}
