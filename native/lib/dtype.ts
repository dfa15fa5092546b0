/**
 * Element types as the manifest spells them. This is the one vocabulary shared by bundles, the
 * codec and the addon; wire (KServe) names and PJRT enum values are derived from it here.
 */
export const DTYPES = [
  'bool',
  'i8',
  'i16',
  'i32',
  'i64',
  'u8',
  'u16',
  'u32',
  'u64',
  'f16',
  'bf16',
  'f32',
  'f64',
] as const;
export type DType = (typeof DTYPES)[number];

/** PJRT_Buffer_Type enum values (pjrt_c_api.h). */
export const PJRT_TYPE: Readonly<Record<DType, number>> = {
  bool: 1,
  i8: 2,
  i16: 3,
  i32: 4,
  i64: 5,
  u8: 6,
  u16: 7,
  u32: 8,
  u64: 9,
  f16: 10,
  f32: 11,
  f64: 12,
  bf16: 13,
};

export const DTYPE_BYTES: Readonly<Record<DType, number>> = {
  bool: 1,
  i8: 1,
  i16: 2,
  i32: 4,
  i64: 8,
  u8: 1,
  u16: 2,
  u32: 4,
  u64: 8,
  f16: 2,
  bf16: 2,
  f32: 4,
  f64: 8,
};

const BY_PJRT = new Map<number, DType>(Object.entries(PJRT_TYPE).map(([k, v]) => [v, k as DType]));

export function isDType(x: unknown): x is DType {
  return typeof x === 'string' && (DTYPES as readonly string[]).includes(x);
}

export function dtypeFromPjrt(code: number): DType | undefined {
  return BY_PJRT.get(code);
}
