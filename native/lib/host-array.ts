import type { NativeHostArray } from './binding.js';
import { ArgumentError } from './errors.js';
import { DTYPE_BYTES, type DType, isDType, PJRT_TYPE } from './dtype.js';

/** Dense row-major data in host memory, as the runtime takes and returns it. */
export interface HostArray {
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly data: Uint8Array;
}

export function byteLengthOf(dtype: DType, shape: readonly number[]): number {
  let n = DTYPE_BYTES[dtype];
  for (const d of shape) n *= d;
  return n;
}

/** Checks dtype, shape and length; returns the array or throws an ArgumentError naming `field`. */
export function checkHostArray(a: HostArray, field: string): HostArray {
  if (a === null || typeof a !== 'object')
    throw new ArgumentError(`${field} must be a host array {dtype, shape, data}`);
  if (!isDType(a.dtype)) throw new ArgumentError(`${field}.dtype: unknown dtype ${JSON.stringify(a.dtype)}`);
  if (!Array.isArray(a.shape)) throw new ArgumentError(`${field}.shape must be an array`);
  a.shape.forEach((d, i) => {
    if (!Number.isSafeInteger(d) || d < 0)
      throw new ArgumentError(`${field}.shape[${i}] must be a non-negative integer`);
  });
  if (!(a.data instanceof Uint8Array)) throw new ArgumentError(`${field}.data must be a Uint8Array`);
  const need = byteLengthOf(a.dtype, a.shape);
  if (a.data.byteLength !== need) {
    throw new ArgumentError(
      `${field}: ${a.dtype}[${a.shape.join(',')}] needs ${need} bytes but data has ${a.data.byteLength}`,
    );
  }
  return a;
}

/** Checks `a` (naming `field` in errors) and gives the form the addon reads host data in. */
export function nativeHostArray(a: HostArray, field: string): NativeHostArray {
  const h = checkHostArray(a, field);
  return { data: h.data, type: PJRT_TYPE[h.dtype], dims: h.shape as number[] };
}

/** Wraps a typed array (or bytes) as a HostArray without copying. */
export function hostArray(dtype: DType, shape: readonly number[], data: ArrayBufferView): HostArray {
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  return checkHostArray({ dtype, shape: [...shape], data: bytes }, 'array');
}

/** A typed view of a HostArray's bytes (copying only when the data is misaligned). */
export function asFloat32(a: HostArray): Float32Array {
  if (a.data.byteOffset % 4 === 0) return new Float32Array(a.data.buffer, a.data.byteOffset, a.data.byteLength / 4);
  return new Float32Array(a.data.slice().buffer);
}
