/**
 * safetensors writer, for tests, tools and uploads. The layout stays readable by the official
 * safetensors readers, which require the data section to be contiguous (no holes): alignment
 * comes from padding the JSON header with spaces so that data starts on an ALIGNMENT boundary,
 * and from placing tensors largest element size first so that each starts on a multiple of its
 * own element size. Typed-array views over a read file are then always legal.
 */
import { writeFile } from 'node:fs/promises';
import type { DType } from '@hloserve/native/dtype';
import { DTYPE_BYTES } from '@hloserve/native/dtype';
import { safetensorsDtypeOf } from './safetensors-dtype.js';

/** Data-section alignment in bytes; 8 covers every element size we store. */
export const ALIGNMENT = 8;

export interface SafetensorsInput {
  readonly name: string;
  readonly dtype: DType;
  /** Row-major shape, as stored. */
  readonly shape: readonly number[];
  /** Raw little-endian bytes; any typed array is taken as its bytes. */
  readonly data: ArrayBufferView;
}

export interface SafetensorsWriteOptions {
  /** Written to `__metadata__` as is (values must be strings). */
  readonly metadata?: Readonly<Record<string, string>>;
  /** Written as `__metadata__.argument_order` (JSON-encoded), as bundles need it. */
  readonly argumentOrder?: readonly string[];
}

export function encodeSafetensors(
  tensors: readonly SafetensorsInput[],
  options: SafetensorsWriteOptions = {},
): Uint8Array {
  const names = new Set<string>();
  for (const t of tensors) {
    if (t.name === '__metadata__' || names.has(t.name))
      throw new Error(`safetensors: duplicate or reserved tensor name "${t.name}"`);
    names.add(t.name);
    const expected = t.shape.reduce((n, d) => n * d, 1) * DTYPE_BYTES[t.dtype];
    if (t.data.byteLength !== expected) {
      throw new Error(
        `safetensors: tensor "${t.name}" has ${t.data.byteLength} bytes, ${t.dtype} ${JSON.stringify(t.shape)} needs ${expected}`,
      );
    }
  }
  // Stable sort: equal element sizes keep the caller's order.
  const ordered = [...tensors].sort((a, b) => DTYPE_BYTES[b.dtype] - DTYPE_BYTES[a.dtype]);

  const header: Record<string, unknown> = {};
  const metadata: Record<string, string> = { ...options.metadata };
  if (options.argumentOrder) metadata.argument_order = JSON.stringify(options.argumentOrder);
  if (Object.keys(metadata).length > 0) header.__metadata__ = metadata;
  let offset = 0;
  for (const t of ordered) {
    header[t.name] = {
      dtype: safetensorsDtypeOf(t.dtype),
      shape: t.shape,
      data_offsets: [offset, offset + t.data.byteLength],
    };
    offset += t.data.byteLength;
  }

  const json = new TextEncoder().encode(JSON.stringify(header));
  const headerLength = Math.ceil((8 + json.byteLength) / ALIGNMENT) * ALIGNMENT - 8;
  const out = new Uint8Array(8 + headerLength + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(headerLength), true);
  out.set(json, 8);
  out.fill(0x20, 8 + json.byteLength, 8 + headerLength);
  let at = 8 + headerLength;
  for (const t of ordered) {
    out.set(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength), at);
    at += t.data.byteLength;
  }
  return out;
}

export async function writeSafetensors(
  path: string,
  tensors: readonly SafetensorsInput[],
  options: SafetensorsWriteOptions = {},
): Promise<void> {
  await writeFile(path, encodeSafetensors(tensors, options));
}
