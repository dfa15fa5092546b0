/**
 * KServe BYTES tensors on the wire: per element a 4-byte little-endian length, then the bytes.
 * One encoder and one decoder for the engine's hooks and the client.
 */

export function encodeBytesElements(elements: readonly Uint8Array[]): Uint8Array {
  let total = 0;
  for (const e of elements) total += 4 + e.byteLength;
  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  let at = 0;
  for (const e of elements) {
    view.setUint32(at, e.byteLength, true);
    out.set(e, at + 4);
    at += 4 + e.byteLength;
  }
  return out;
}

/**
 * The elements of an encoded BYTES tensor, as views into `bytes` (copy them to keep them past
 * its life). Throws RangeError on a truncated encoding.
 */
export function decodeBytesElements(bytes: Uint8Array): Uint8Array[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: Uint8Array[] = [];
  let at = 0;
  while (at < bytes.byteLength) {
    if (at + 4 > bytes.byteLength) throw new RangeError('BYTES tensor: truncated length prefix');
    const len = view.getUint32(at, true);
    if (at + 4 + len > bytes.byteLength) throw new RangeError('BYTES tensor: element runs past the end');
    out.push(bytes.subarray(at + 4, at + 4 + len));
    at += 4 + len;
  }
  return out;
}
