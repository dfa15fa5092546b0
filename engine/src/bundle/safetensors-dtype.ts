/**
 * safetensors dtype names <-> manifest dtypes. Only the types the runtime can hold are listed;
 * FP8 and the sub-byte types are refused by the reader with a message naming the tensor.
 */
import type { DType } from '@hloserve/native/dtype';

export const SAFETENSORS_DTYPES = {
  BOOL: 'bool',
  U8: 'u8',
  U16: 'u16',
  U32: 'u32',
  U64: 'u64',
  I8: 'i8',
  I16: 'i16',
  I32: 'i32',
  I64: 'i64',
  F16: 'f16',
  BF16: 'bf16',
  F32: 'f32',
  F64: 'f64',
} as const satisfies Record<string, DType>;
export type SafetensorsDtype = keyof typeof SAFETENSORS_DTYPES;

const BY_DTYPE = new Map<DType, SafetensorsDtype>(
  Object.entries(SAFETENSORS_DTYPES).map(([st, d]) => [d, st as SafetensorsDtype]),
);

export function dtypeFromSafetensors(name: string): DType | undefined {
  return Object.hasOwn(SAFETENSORS_DTYPES, name) ? SAFETENSORS_DTYPES[name as SafetensorsDtype] : undefined;
}

export function safetensorsDtypeOf(dtype: DType): SafetensorsDtype {
  return BY_DTYPE.get(dtype)!;
}
