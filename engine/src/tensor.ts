import type { DType } from '@hloserve/native/dtype';

/** Element types a client tensor may have: the executable dtypes plus KServe BYTES. */
export type TensorDType = DType | 'BYTES';

/**
 * A tensor in host memory in wire layout: row-major, little-endian, shape as on the wire (the
 * manifest letters reversed). `data` is usually a view into a request buffer, never copied
 * unless it must be. BYTES tensors hold the KServe encoding (u32 LE length + bytes per element).
 */
export interface HostTensor {
  readonly name: string;
  readonly dtype: TensorDType;
  readonly shape: readonly number[];
  readonly data: Uint8Array;
}

export function elementCount(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}
