import { invalidArgument } from '@hloserve/common/errors';

/**
 * KServe BYTES tensors on the wire: per element a 4-byte little-endian length, then the bytes.
 * Returns the element count, or throws when the encoding is truncated.
 */
export function countBytesElements(data: Uint8Array, field: string): number {
  const dv = new DataView(data.buffer, data.byteOffset, data.byteLength);
  let o = 0;
  let n = 0;
  while (o < data.byteLength) {
    if (o + 4 > data.byteLength) throw invalidArgument(`${field}: BYTES element ${n} has a truncated length prefix`);
    const len = dv.getUint32(o, true);
    if (len > data.byteLength - o - 4)
      throw invalidArgument(`${field}: BYTES element ${n} claims ${len} bytes past the end of the data`);
    o += 4 + len;
    n++;
  }
  return n;
}

export function encodeBytesElements(values: readonly unknown[], field: string): Uint8Array {
  const parts = values.map((v, i) => {
    if (typeof v === 'string') return Buffer.from(v, 'utf8');
    if (v instanceof Uint8Array) return v;
    throw invalidArgument(`${field}[${i}]: BYTES elements must be strings or bytes`);
  });
  const out = Buffer.allocUnsafe(parts.reduce((s, p) => s + 4 + p.byteLength, 0));
  let o = 0;
  for (const p of parts) {
    out.writeUInt32LE(p.byteLength, o);
    out.set(p, o + 4);
    o += 4 + p.byteLength;
  }
  return out;
}
