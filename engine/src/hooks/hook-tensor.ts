/**
 * Tensors as a hook sees them: typed arrays with a shape and a dtype, BYTES as arrays of
 * Uint8Array. A hook's results come back to the engine transferred (moved, not copied), since
 * their numeric data owns its whole ArrayBuffer; inputs go to the thread as a copy (hook-pool.ts
 * says why).
 */
import { decodeBytesElements, encodeBytesElements } from '@hloserve/common/bytes-elements';
import { ServeError } from '@hloserve/common/errors';
import { DTYPE_BYTES } from '@hloserve/native/dtype';
import type { TensorDType } from '../tensor.js';
import { elementCount, type HostTensor } from '../tensor.js';

export type NumericArray =
  | Uint8Array
  | Int8Array
  | Int16Array
  | Uint16Array
  | Int32Array
  | Uint32Array
  | Float32Array
  | Float64Array
  | BigInt64Array
  | BigUint64Array;

export interface HookTensor {
  readonly dtype: TensorDType;
  readonly shape: readonly number[];
  /** A typed array of the dtype's element type; f16 / bf16 as raw Uint16Array; BYTES as Uint8Array[]. */
  readonly data: NumericArray | readonly Uint8Array[];
}

export type HookTensors = Readonly<Record<string, HookTensor>>;

type ArrayCtor = new (buffer: ArrayBufferLike, byteOffset?: number, length?: number) => NumericArray;

const VIEW: Readonly<Record<Exclude<TensorDType, 'BYTES'>, ArrayCtor>> = {
  bool: Uint8Array,
  u8: Uint8Array,
  i8: Int8Array,
  i16: Int16Array,
  u16: Uint16Array,
  f16: Uint16Array,
  bf16: Uint16Array,
  i32: Int32Array,
  u32: Uint32Array,
  f32: Float32Array,
  f64: Float64Array,
  i64: BigInt64Array,
  u64: BigUint64Array,
};

/** The typed-array constructor a hook must use for a dtype (null for BYTES). */
export function arrayTypeFor(dtype: TensorDType): ArrayCtor | null {
  return dtype === 'BYTES' ? null : VIEW[dtype];
}

/**
 * A request tensor as a hook tensor. The wire bytes are usually a view into a larger request
 * buffer, often unaligned for the typed array, so numeric data is copied once into a buffer of
 * its own.
 */
export function toHookTensor(t: HostTensor): HookTensor {
  if (t.dtype === 'BYTES')
    return { dtype: t.dtype, shape: t.shape, data: decodeBytesElements(t.data).map((e) => e.slice()) };
  const own = new Uint8Array(t.data.byteLength);
  own.set(t.data);
  return {
    dtype: t.dtype,
    shape: t.shape,
    data: new VIEW[t.dtype](own.buffer, 0, own.byteLength / DTYPE_BYTES[t.dtype]),
  };
}

/**
 * A hook tensor back in wire layout; numeric data is viewed, not copied, unless it lives in a
 * SharedArrayBuffer: the hook's thread could still write it while a batch reads it.
 */
export function toHostTensor(name: string, t: HookTensor): HostTensor {
  if (t.dtype === 'BYTES')
    return { name, dtype: t.dtype, shape: t.shape, data: encodeBytesElements(t.data as Uint8Array[]) };
  const d = t.data as NumericArray;
  const view = new Uint8Array(d.buffer, d.byteOffset, d.byteLength);
  return { name, dtype: t.dtype, shape: t.shape, data: d.buffer instanceof ArrayBuffer ? view : view.slice() };
}

/** The ArrayBuffers postMessage may move: each numeric tensor's, once, when it owns all of it. */
export function transferList(tensors: HookTensors): ArrayBuffer[] {
  const out = new Set<ArrayBuffer>();
  // A hook's result is unchecked here: anything that is not a tensor's view is left to the clone.
  for (const t of Object.values(tensors ?? {}) as Partial<HookTensor>[]) {
    const data: unknown = typeof t === 'object' && t !== null ? t.data : undefined;
    const parts: readonly unknown[] = Array.isArray(data) ? data : [data];
    for (const p of parts) {
      if (!ArrayBuffer.isView(p)) continue;
      if (p.buffer instanceof ArrayBuffer && p.byteOffset === 0 && p.byteLength === p.buffer.byteLength)
        out.add(p.buffer);
    }
  }
  return [...out];
}

/**
 * Checks what a hook returned against the tensors it must produce: every name present, nothing
 * extra, dtype and typed-array type right, element count matching the shape, and fixed extents
 * as specified (-1 / null in `spec.shape` is free). A hook's mistake must never reach a batch;
 * it is the bundle's fault, not the client's, so it answers HLO_ERR_HOOK_FAILED.
 */
const hookFault = (message: string): ServeError => new ServeError('HLO_ERR_HOOK_FAILED', message);

export function checkHookTensors(
  what: string,
  got: unknown,
  spec: readonly { name: string; dtype: TensorDType; shape: readonly (number | null)[] }[],
): HookTensors {
  const rec = namedTensors(what, got);
  const want = new Set(spec.map((s) => s.name));
  for (const k of Object.keys(rec)) if (!want.has(k)) throw hookFault(`${what}: unexpected tensor "${k.slice(0, 64)}"`);
  for (const s of spec) {
    const at = `${what}: tensor "${s.name}"`;
    const t = checkTensor(at, rec[s.name], s.dtype);
    if (t.shape.length !== s.shape.length) throw hookFault(`${at}: rank ${t.shape.length}, expected ${s.shape.length}`);
    s.shape.forEach((d, i) => {
      if (d !== null && d >= 0 && t.shape[i] !== d)
        throw hookFault(`${at}: dimension ${i} is ${t.shape[i]}, expected ${d}`);
    });
  }
  return rec as HookTensors;
}

/**
 * Checks the tensors a meta model's run passes to `call`: any names (the called model's own
 * request checks judge them), each a well-formed tensor of a dtype the engine knows, so that
 * turning them into a request cannot fail on their form.
 */
export function checkCallTensors(what: string, got: unknown): HookTensors {
  const rec = namedTensors(what, got);
  for (const [name, t] of Object.entries(rec)) checkTensor(`${what}: tensor "${name.slice(0, 64)}"`, t, null);
  return rec as HookTensors;
}

function namedTensors(what: string, got: unknown): Record<string, unknown> {
  if (typeof got !== 'object' || got === null || Array.isArray(got))
    throw hookFault(`${what}: expected an object of named tensors, got ${describe(got)}`);
  return got as Record<string, unknown>;
}

/** One tensor's form: its dtype (`dtype`, or any the engine knows when null), shape and data. */
function checkTensor(at: string, got: unknown, dtype: TensorDType | null): HookTensor {
  const t = got as Partial<HookTensor> | undefined;
  if (t === undefined || t === null || typeof t !== 'object') throw hookFault(`${at} is missing`);
  if (dtype === null ? !isTensorDType(t.dtype) : t.dtype !== dtype)
    throw hookFault(`${at}: dtype ${describe(t.dtype)}, expected ${dtype ?? 'a tensor dtype'}`);
  if (!Array.isArray(t.shape) || !t.shape.every((d) => Number.isSafeInteger(d) && d >= 0))
    throw hookFault(`${at}: shape must be an array of non-negative integers`);
  const n = elementCount(t.shape);
  if (t.dtype === 'BYTES') {
    if (!Array.isArray(t.data) || !t.data.every((b) => b instanceof Uint8Array))
      throw hookFault(`${at}: BYTES data must be an array of Uint8Array`);
    if (t.data.length !== n) throw hookFault(`${at}: ${t.data.length} elements for shape [${t.shape.join(',')}]`);
  } else {
    const Ctor = VIEW[t.dtype!];
    if (!(t.data instanceof Ctor)) throw hookFault(`${at}: data must be a ${Ctor.name}`);
    if (t.data.length !== n) throw hookFault(`${at}: ${t.data.length} elements for shape [${t.shape.join(',')}]`);
  }
  return t as HookTensor;
}

function isTensorDType(x: unknown): x is TensorDType {
  return x === 'BYTES' || (typeof x === 'string' && Object.prototype.hasOwnProperty.call(VIEW, x));
}

function describe(x: unknown): string {
  if (x === null) return 'null';
  if (Array.isArray(x)) return 'an array';
  return typeof x === 'string' ? `"${x.slice(0, 32)}"` : typeof x;
}
