/**
 * A tensor as the client hands it in and out: a datatype, a row-major shape, and the elements in
 * the typed array of that datatype (BYTES: one Uint8Array per element).
 */
import { arrayType, datatypeOf, elementSize, type Datatype, type NumericArray } from './datatypes.js';
import { decodeBytesElements as decodeElements, encodeBytesElements } from '@hloserve/common/bytes-elements';

export interface Tensor {
  readonly datatype: Datatype;
  readonly shape: readonly number[];
  readonly data: NumericArray | readonly Uint8Array[];
}

/** A named output of an inference. */
export interface OutputTensor extends Tensor {
  readonly name: string;
}

/** A tensor from a typed array; the datatype follows the array unless given (BOOL, FP16, BF16). */
export function tensor(data: NumericArray, shape: readonly number[], datatype?: Datatype): Tensor {
  return { datatype: datatype ?? datatypeOf(data), shape, data };
}

/** A BYTES tensor: one element per Uint8Array (or string, stored as UTF-8). */
export function bytesTensor(elements: readonly (Uint8Array | string)[], shape?: readonly number[]): Tensor {
  const data = elements.map((e) => (typeof e === 'string' ? new TextEncoder().encode(e) : e));
  return { datatype: 'BYTES', shape: shape ?? [data.length], data };
}

export function elementCount(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

/** Checks that the data holds exactly the elements the shape says, in the datatype's array. */
export function checkTensor(name: string, t: Tensor): void {
  const want = elementCount(t.shape);
  if (!t.shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
    throw new TypeError(`input '${name}': shape ${JSON.stringify(t.shape)} must be non-negative integers`);
  }
  if (t.datatype === 'BYTES') {
    if (!Array.isArray(t.data)) throw new TypeError(`input '${name}': BYTES data must be an array of Uint8Array`);
  } else {
    const Ctor = arrayType(t.datatype);
    if (!(t.data instanceof Ctor)) {
      throw new TypeError(`input '${name}': ${t.datatype} data must be a ${Ctor.name}`);
    }
  }
  if (t.data.length !== want) {
    throw new TypeError(
      `input '${name}': shape ${JSON.stringify(t.shape)} holds ${want} elements, data has ${t.data.length}`,
    );
  }
}

/** The tensor's row-major little-endian bytes; a view (no copy) for numeric tensors. */
export function tensorBytes(t: Tensor): Uint8Array {
  if (t.datatype !== 'BYTES') {
    const a = t.data as NumericArray;
    return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
  }
  return encodeBytesElements(t.data as readonly Uint8Array[]);
}

export { encodeBytesElements };

/** The elements of a BYTES tensor of `count` elements, as views into `bytes`. */
export function decodeBytesElements(bytes: Uint8Array, count: number): Uint8Array[] {
  const out = decodeElements(bytes);
  if (out.length !== count) throw new RangeError(`BYTES tensor: ${out.length} elements, shape says ${count}`);
  return out;
}

/** A fresh copy in its own buffer (Buffer#slice would return a view, not a copy). */
export function copyBytes(bytes: Uint8Array): Uint8Array {
  const out = new Uint8Array(bytes.byteLength);
  out.set(bytes);
  return out;
}

/**
 * Raw little-endian bytes -> the datatype's typed array. A view when the bytes are aligned for the
 * element size (the usual case), a copy when not: a typed array cannot start at an odd offset.
 */
export function tensorFromBytes(datatype: Datatype, shape: readonly number[], bytes: Uint8Array): Tensor {
  const count = elementCount(shape);
  if (datatype === 'BYTES') return { datatype, shape, data: decodeBytesElements(bytes, count) };
  const size = elementSize(datatype)!;
  if (bytes.byteLength !== count * size) {
    throw new RangeError(`${datatype} ${JSON.stringify(shape)} needs ${count * size} bytes, got ${bytes.byteLength}`);
  }
  const Ctor = arrayType(datatype);
  const aligned = bytes.byteOffset % size === 0 ? bytes : copyBytes(bytes);
  return { datatype, shape, data: new Ctor(aligned.buffer, aligned.byteOffset, count) };
}
