/**
 * KServe V2 datatypes and the typed array each one travels in. FP16 and BF16 have no typed array
 * on Node 20, so their raw bits travel in a Uint16Array; BOOL is one byte per element.
 */
export type NumericArray =
  | Float32Array
  | Float64Array
  | Int8Array
  | Int16Array
  | Int32Array
  | BigInt64Array
  | Uint8Array
  | Uint16Array
  | Uint32Array
  | BigUint64Array;

export type Datatype =
  | 'BOOL'
  | 'UINT8'
  | 'UINT16'
  | 'UINT32'
  | 'UINT64'
  | 'INT8'
  | 'INT16'
  | 'INT32'
  | 'INT64'
  | 'FP16'
  | 'BF16'
  | 'FP32'
  | 'FP64'
  | 'BYTES';

interface ArrayCtor {
  readonly BYTES_PER_ELEMENT: number;
  new (buffer: ArrayBufferLike, byteOffset: number, length: number): NumericArray;
  new (length: number): NumericArray;
}

const ARRAYS: Readonly<Record<Exclude<Datatype, 'BYTES'>, ArrayCtor>> = {
  BOOL: Uint8Array,
  UINT8: Uint8Array,
  UINT16: Uint16Array,
  UINT32: Uint32Array,
  UINT64: BigUint64Array,
  INT8: Int8Array,
  INT16: Int16Array,
  INT32: Int32Array,
  INT64: BigInt64Array,
  FP16: Uint16Array,
  BF16: Uint16Array,
  FP32: Float32Array,
  FP64: Float64Array,
};

export function isDatatype(s: string): s is Datatype {
  return s === 'BYTES' || Object.hasOwn(ARRAYS, s);
}

/** The typed array constructor of a fixed-size datatype. */
export function arrayType(datatype: Exclude<Datatype, 'BYTES'>): ArrayCtor {
  return ARRAYS[datatype];
}

/** Bytes per element, or null for BYTES (variable length). */
export function elementSize(datatype: Datatype): number | null {
  return datatype === 'BYTES' ? null : ARRAYS[datatype].BYTES_PER_ELEMENT;
}

/** The datatype a typed array implies when none is given (Uint8Array -> UINT8, Uint16Array -> UINT16). */
export function datatypeOf(data: NumericArray): Datatype {
  if (data instanceof Float32Array) return 'FP32';
  if (data instanceof Float64Array) return 'FP64';
  if (data instanceof Int8Array) return 'INT8';
  if (data instanceof Int16Array) return 'INT16';
  if (data instanceof Int32Array) return 'INT32';
  if (data instanceof BigInt64Array) return 'INT64';
  if (data instanceof Uint8Array) return 'UINT8';
  if (data instanceof Uint16Array) return 'UINT16';
  if (data instanceof Uint32Array) return 'UINT32';
  return 'UINT64';
}
