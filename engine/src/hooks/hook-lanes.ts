/**
 * The shared control block between the engine and one hook thread: the fast path for small
 * preprocess / postprocess calls. The engine writes the call into a lane of a SharedArrayBuffer
 * and rings a doorbell word that the thread sleeps on (Atomics.wait, no event loop turn); the
 * thread writes the result back into the lane and sends the engine one small note for every lane
 * done until the engine reads them (a message: the engine's event loop must wake anyway, and
 * Atomics.waitAsync on the engine's side measured slower than a message under load). Calls that
 * do not fit a lane, carry BYTES, or are a meta model's run (which talks back) use messages.
 *
 * Layout: Int32 words [doorbell, noted, mail, sleeping, state of lane 0..n-1], then one Float64
 * per lane (when its hook started, epoch ms), then the lanes' bytes. A lane holds a JSON header
 * (length-prefixed) followed by the tensors' bytes, each at an 8-byte aligned offset.
 */
import { DTYPE_BYTES } from '@hloserve/native/dtype';
import type { TensorDType } from '../tensor.js';
import { arrayTypeFor, type HookTensor, type HookTensors, type NumericArray } from './hook-tensor.js';

/** Rung (incremented, and notified if the thread sleeps) by the engine after it fills a lane or posts a message. */
export const DOORBELL = 0;
/** 1 while a note that lanes are done is on its way to the engine: one note covers every lane done meanwhile. */
export const NOTED = 1;
/** Messages the engine has posted to the thread: the thread leaves its wait to read them. */
export const MAIL = 2;
/** 1 while the thread sleeps on the doorbell: only then does ringing it cost a wake-up. */
export const SLEEPING = 3;
const STATE0 = 4;

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
  readonly bytes: Uint8Array;
  readonly lanes: number;
  readonly laneBytes: number;
  readonly #dataStart: number;

  constructor(shape: LaneBlockShape, sab?: SharedArrayBuffer) {
    this.lanes = shape.lanes;
    this.laneBytes = shape.laneBytes;
    const wordsBytes = align8(4 * (STATE0 + shape.lanes));
    this.#dataStart = wordsBytes + 8 * shape.lanes;
    this.sab = sab ?? new SharedArrayBuffer(this.#dataStart + shape.lanes * shape.laneBytes);
    this.words = new Int32Array(this.sab, 0, STATE0 + shape.lanes);
    this.startedAt = new Float64Array(this.sab, wordsBytes, shape.lanes);
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
   * the other's write and no wake-up is lost).
   */
  ring(): void {
    Atomics.add(this.words, DOORBELL, 1);
    if (Atomics.load(this.words, SLEEPING) === 1) Atomics.notify(this.words, DOORBELL);
  }

  /** The lane's bytes. */
  lane(lane: number): Uint8Array {
    const at = this.#dataStart + lane * this.laneBytes;
    return this.bytes.subarray(at, at + this.laneBytes);
  }
}

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

/**
 * Writes `header` (JSON; null writes none) and `tensors` into a lane; false (nothing is promised
 * about the lane's bytes) when a tensor is not a plain numeric one of its dtype's array type or
 * the whole does not fit. The tensor table is binary: JSON for it cost more than the copies.
 */
export function writeLane(lane: Uint8Array, header: object | null, tensors: unknown): boolean {
  if (typeof tensors !== 'object' || tensors === null || Array.isArray(tensors)) return false;
  const names = Object.keys(tensors);
  const values = names.map((n) => (tensors as Record<string, unknown>)[n]);
  let tableBytes = 0;
  let dataBytes = 0;
  for (let i = 0; i < values.length; i++) {
    const t = values[i] as Partial<HookTensor> | null;
    if (typeof t !== 'object' || t === null || typeof t.dtype !== 'string') return false;
    const code = CODE_OF.get(t.dtype);
    if (code === undefined || !(t.data instanceof arrayTypeFor(t.dtype)!) || !Array.isArray(t.shape)) return false;
    if (t.shape.length > 255 || !t.shape.every((d) => Number.isSafeInteger(d))) return false;
    tableBytes += ENTRY + 8 * t.shape.length + align8(3 * names[i]!.length);
    dataBytes += align8((t.data as NumericArray).byteLength);
  }
  const buf = Buffer.from(lane.buffer, lane.byteOffset, lane.byteLength);
  const view = new DataView(lane.buffer, lane.byteOffset, lane.byteLength);
  // Header length is known only once written: UTF-8 may take up to 3 bytes per UTF-16 unit.
  const headText = header === null ? '' : JSON.stringify(header);
  const headMax = 3 * headText.length;
  if (align8(8 + headMax) + tableBytes + dataBytes > lane.byteLength) return false;
  const headBytes = headText.length === 0 ? 0 : buf.write(headText, 8, 'utf8');
  view.setUint32(0, headBytes, true);
  view.setUint32(4, names.length, true);
  let at = align8(8 + headBytes);
  let data = at + tableBytes;
  for (let i = 0; i < values.length; i++) {
    const t = values[i] as HookTensor;
    const d = t.data as NumericArray;
    const nameBytes = buf.write(names[i]!, at + ENTRY + 8 * t.shape.length, 'utf8');
    view.setUint32(at, nameBytes, true);
    view.setUint8(at + 4, CODE_OF.get(t.dtype)!);
    view.setUint8(at + 5, t.shape.length);
    view.setUint32(at + 8, data, true);
    view.setUint32(at + 12, d.byteLength, true);
    for (let k = 0; k < t.shape.length; k++) view.setFloat64(at + ENTRY + 8 * k, t.shape[k]!, true);
    at += ENTRY + 8 * t.shape.length + align8(nameBytes);
    lane.set(new Uint8Array(d.buffer, d.byteOffset, d.byteLength), data);
    data += align8(d.byteLength);
  }
  return true;
}

/** Reads a lane written by writeLane; every tensor is copied out into an ArrayBuffer of its own. */
export function readLane<H>(lane: Uint8Array): { header: H | null; tensors: HookTensors } {
  const buf = Buffer.from(lane.buffer, lane.byteOffset, lane.byteLength);
  const view = new DataView(lane.buffer, lane.byteOffset, lane.byteLength);
  const headBytes = view.getUint32(0, true);
  const count = view.getUint32(4, true);
  const header = headBytes === 0 ? null : (JSON.parse(buf.toString('utf8', 8, 8 + headBytes)) as H);
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
    own.set(lane.subarray(offset, offset + byteLength));
    tensors[name] = { dtype, shape, data: new (arrayTypeFor(dtype)!)(own.buffer, 0, byteLength / DTYPE_BYTES[dtype]) };
  }
  return { header, tensors };
}

function align8(n: number): number {
  return (n + 7) & ~7;
}
