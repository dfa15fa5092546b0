/**
 * Raw KServe tensor bytes (little-endian, row-major; BYTES length-prefixed) read as plain values,
 * and made up for a model without a reference input. Only the console's try-it panel uses these:
 * a preview of a few elements and a comparison with a reference, never the serving path.
 */
import { decodeBytesElements, encodeBytesElements } from '@hloserve/common/bytes-elements';

const WIDTH: Readonly<Record<string, number>> = {
  BOOL: 1,
  UINT8: 1,
  INT8: 1,
  UINT16: 2,
  INT16: 2,
  FP16: 2,
  BF16: 2,
  UINT32: 4,
  INT32: 4,
  FP32: 4,
  UINT64: 8,
  INT64: 8,
  FP64: 8,
};

export type PlainValue = number | string | boolean;

function half(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exp = (bits >> 10) & 0x1f;
  const frac = bits & 0x3ff;
  if (exp === 0) return sign * 2 ** -14 * (frac / 1024);
  if (exp === 31) return frac ? NaN : sign * Infinity;
  return sign * 2 ** (exp - 15) * (1 + frac / 1024);
}

/** The first `limit` elements of a tensor (64-bit integers as numbers: a preview, not the value). */
export function readValues(datatype: string, bytes: Uint8Array, limit = Infinity): PlainValue[] {
  if (datatype === 'BYTES') {
    const dec = new TextDecoder('utf-8', { fatal: false });
    return decodeBytesElements(bytes)
      .slice(0, Number.isFinite(limit) ? limit : undefined)
      .map((e) => dec.decode(e.subarray(0, 64)) + (e.byteLength > 64 ? '…' : ''));
  }
  const w = WIDTH[datatype];
  if (w === undefined) return [];
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = Math.min(Math.floor(bytes.byteLength / w), limit);
  const out: PlainValue[] = new Array<PlainValue>(n);
  for (let i = 0; i < n; i++) {
    const o = i * w;
    switch (datatype) {
      case 'BOOL':
        out[i] = view.getUint8(o) !== 0;
        break;
      case 'UINT8':
        out[i] = view.getUint8(o);
        break;
      case 'INT8':
        out[i] = view.getInt8(o);
        break;
      case 'UINT16':
        out[i] = view.getUint16(o, true);
        break;
      case 'INT16':
        out[i] = view.getInt16(o, true);
        break;
      case 'FP16':
        out[i] = half(view.getUint16(o, true));
        break;
      case 'BF16':
        out[i] = new Float32Array(new Uint32Array([view.getUint16(o, true) << 16]).buffer)[0]!;
        break;
      case 'UINT32':
        out[i] = view.getUint32(o, true);
        break;
      case 'INT32':
        out[i] = view.getInt32(o, true);
        break;
      case 'FP32':
        out[i] = view.getFloat32(o, true);
        break;
      case 'UINT64':
        out[i] = Number(view.getBigUint64(o, true));
        break;
      case 'INT64':
        out[i] = Number(view.getBigInt64(o, true));
        break;
      default:
        out[i] = view.getFloat64(o, true);
    }
  }
  return out;
}

/** Largest |a - b| over two numeric tensors of the same datatype (null when not comparable). */
export function maxAbsDiff(datatype: string, a: Uint8Array, b: Uint8Array): number | null {
  if (datatype === 'BYTES' || a.byteLength !== b.byteLength) return null;
  const x = readValues(datatype, a);
  const y = readValues(datatype, b);
  let worst = 0;
  for (let i = 0; i < x.length; i++) {
    const d = Math.abs(Number(x[i]) - Number(y[i]));
    if (!(d <= worst)) worst = d;
  }
  return worst;
}

/**
 * A made-up input of a datatype and element count: floats a smooth wave in [-1, 1], integers
 * 0..6, booleans alternating, BYTES the text "hloserve". Deterministic, so two tries compare.
 */
export function generatedBytes(datatype: string, elements: number): Uint8Array {
  if (datatype === 'BYTES') {
    const word = new TextEncoder().encode('hloserve');
    return encodeBytesElements(Array.from({ length: elements }, () => word));
  }
  const w = WIDTH[datatype] ?? 4;
  const bytes = new Uint8Array(elements * w);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < elements; i++) {
    const f = Math.sin(i * 0.37);
    const k = i % 7;
    const o = i * w;
    switch (datatype) {
      case 'BOOL':
        view.setUint8(o, i % 2);
        break;
      case 'UINT8':
      case 'INT8':
        view.setUint8(o, k);
        break;
      case 'UINT16':
      case 'INT16':
        view.setUint16(o, k, true);
        break;
      case 'UINT32':
      case 'INT32':
        view.setUint32(o, k, true);
        break;
      case 'UINT64':
      case 'INT64':
        view.setBigUint64(o, BigInt(k), true);
        break;
      case 'FP16':
      case 'BF16':
        view.setUint16(o, 0, true);
        break;
      case 'FP64':
        view.setFloat64(o, f, true);
        break;
      default:
        view.setFloat32(o, f, true);
    }
  }
  return bytes;
}
