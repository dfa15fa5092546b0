/**
 * The element-type vocabularies hloserve speaks, all derived from the manifest tokens of
 * `@hloserve/native/dtype` (the one source of truth): KServe wire datatype strings, element byte
 * sizes, and Triton ModelConfig DataType enum values (model_config.proto). Keeping every mapping
 * in one table means a dtype cannot be added to one protocol and forgotten in another.
 */
import { DTYPES, DTYPE_BYTES, isDType, type DType } from '@hloserve/native/dtype';
import type { TensorDType } from './tensor.js';

export type { DType } from '@hloserve/native/dtype';
export type { TensorDType } from './tensor.js';

/** Every token a manifest may use for a tensor dtype: the executable dtypes plus `BYTES`. */
export const TENSOR_DTYPES: readonly TensorDType[] = [...DTYPES, 'BYTES'];

/**
 * dtypes the reference (ReactantServer.jl) accepts on executable tensors but hloserve does not:
 * they have no KServe wire name and the runtime binding has no host representation for them.
 * They are recognised only so that the error says "unsupported" instead of "unknown".
 */
export const UNSUPPORTED_DTYPE_TOKENS = ['f8_e5m2', 'f8_e4m3'] as const;

export const WIRE_DATATYPES = [
  'BOOL',
  'UINT8',
  'UINT16',
  'UINT32',
  'UINT64',
  'INT8',
  'INT16',
  'INT32',
  'INT64',
  'FP16',
  'FP32',
  'FP64',
  'BF16',
  'BYTES',
] as const;
/** KServe V2 tensor datatype strings. */
export type WireDatatype = (typeof WIRE_DATATYPES)[number];

const TO_WIRE: Readonly<Record<TensorDType, WireDatatype>> = {
  bool: 'BOOL',
  u8: 'UINT8',
  u16: 'UINT16',
  u32: 'UINT32',
  u64: 'UINT64',
  i8: 'INT8',
  i16: 'INT16',
  i32: 'INT32',
  i64: 'INT64',
  f16: 'FP16',
  f32: 'FP32',
  f64: 'FP64',
  bf16: 'BF16',
  BYTES: 'BYTES',
};

const FROM_WIRE: ReadonlyMap<string, TensorDType> = new Map(
  Object.entries(TO_WIRE).map(([dtype, wire]) => [wire, dtype as TensorDType]),
);

/** Triton `inference.DataType` (model_config.proto); TYPE_STRING is how Triton names BYTES. */
export const TRITON_DATA_TYPE = {
  TYPE_INVALID: 0,
  TYPE_BOOL: 1,
  TYPE_UINT8: 2,
  TYPE_UINT16: 3,
  TYPE_UINT32: 4,
  TYPE_UINT64: 5,
  TYPE_INT8: 6,
  TYPE_INT16: 7,
  TYPE_INT32: 8,
  TYPE_INT64: 9,
  TYPE_FP16: 10,
  TYPE_FP32: 11,
  TYPE_FP64: 12,
  TYPE_STRING: 13,
  TYPE_BF16: 14,
} as const;
export type TritonDataTypeName = keyof typeof TRITON_DATA_TYPE;
export type TritonDataType = (typeof TRITON_DATA_TYPE)[TritonDataTypeName];

const TO_TRITON_NAME: Readonly<Record<TensorDType, Exclude<TritonDataTypeName, 'TYPE_INVALID'>>> = {
  bool: 'TYPE_BOOL',
  u8: 'TYPE_UINT8',
  u16: 'TYPE_UINT16',
  u32: 'TYPE_UINT32',
  u64: 'TYPE_UINT64',
  i8: 'TYPE_INT8',
  i16: 'TYPE_INT16',
  i32: 'TYPE_INT32',
  i64: 'TYPE_INT64',
  f16: 'TYPE_FP16',
  f32: 'TYPE_FP32',
  f64: 'TYPE_FP64',
  BYTES: 'TYPE_STRING',
  bf16: 'TYPE_BF16',
};

const FROM_TRITON: ReadonlyMap<number, TensorDType> = new Map(
  Object.entries(TO_TRITON_NAME).map(([dtype, name]) => [TRITON_DATA_TYPE[name], dtype as TensorDType]),
);

export function isTensorDType(x: unknown): x is TensorDType {
  return x === 'BYTES' || isDType(x);
}

export function toWireDatatype(dtype: TensorDType): WireDatatype {
  return TO_WIRE[dtype];
}

/** The dtype for a KServe datatype string; case-sensitive, as the protocol is. */
export function fromWireDatatype(wire: string): TensorDType | undefined {
  return FROM_WIRE.get(wire);
}

export function toTritonDataType(dtype: TensorDType): TritonDataType {
  return TRITON_DATA_TYPE[TO_TRITON_NAME[dtype]];
}

/** The enum name, as Triton's JSON model config spells it (`"TYPE_FP32"`). */
export function toTritonDataTypeName(dtype: TensorDType): TritonDataTypeName {
  return TO_TRITON_NAME[dtype];
}

export function fromTritonDataType(value: number): TensorDType | undefined {
  return FROM_TRITON.get(value);
}

/** Bytes per element of a fixed-size dtype. */
export function elementByteSize(dtype: DType): number {
  return DTYPE_BYTES[dtype];
}

/** Bytes per element, or null for BYTES, whose elements are length-prefixed and variable. */
export function fixedElementByteSize(dtype: TensorDType): number | null {
  return dtype === 'BYTES' ? null : DTYPE_BYTES[dtype];
}

/** Where a manifest tensor sits: only client-facing tensors may be BYTES. */
export type TensorRole = 'executable' | 'client';

export type DTypeTokenResult =
  { readonly ok: true; readonly dtype: TensorDType } | { readonly ok: false; readonly error: string };

/**
 * Reads a manifest dtype token. Errors are phrased for a message that already names the field,
 * and point at the right spelling when someone writes a wire name (`FP32`) instead of a token.
 */
export function parseDTypeToken(token: unknown, role: TensorRole): DTypeTokenResult {
  if (typeof token !== 'string') {
    return {
      ok: false,
      error: `expected a dtype token (${TENSOR_DTYPES.join(' ')}), got ${token === undefined ? 'nothing' : JSON.stringify(token)}`,
    };
  }
  if (token === 'BYTES') {
    return role === 'client'
      ? { ok: true, dtype: 'BYTES' }
      : {
          ok: false,
          error: 'BYTES is only allowed on client_inputs/client_outputs (a hook must turn it into numbers)',
        };
  }
  if (isDType(token)) return { ok: true, dtype: token };
  if ((UNSUPPORTED_DTYPE_TOKENS as readonly string[]).includes(token)) {
    return {
      ok: false,
      error: `dtype ${token} is not supported by hloserve (no KServe wire datatype and no runtime host type for FP8)`,
    };
  }
  const fromWire = FROM_WIRE.get(token.toUpperCase());
  const hint = fromWire && fromWire !== 'BYTES' ? ` (did you mean "${fromWire}"? manifests use lowercase tokens)` : '';
  return {
    ok: false,
    error: `unknown dtype ${JSON.stringify(token)}${hint}; expected one of ${TENSOR_DTYPES.join(' ')}`,
  };
}
