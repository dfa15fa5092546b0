import { invalidArgument, quote } from '@hloserve/common/errors';
import type { TensorDType } from '../tensor.js';
import { encodeBytesElements } from './bytes-tensor.js';

/**
 * Converts typed values (gRPC InferTensorContents, HTTP JSON `data`) into row-major little-endian
 * bytes. Every element is range-checked: a silent wrap-around would be a wrong answer.
 */
export function typedToBytes(dtype: TensorDType, values: readonly unknown[], field: string): Uint8Array {
  const n = values.length;
  const bad = (i: number, what: string) =>
    invalidArgument(`${field}[${i}]: ${quote(values[i])} is not a valid ${what}`);
  const ints = (bytes: number, min: number, max: number, set: (dv: DataView, o: number, v: number) => void) => {
    const out = new Uint8Array(n * bytes);
    const dv = new DataView(out.buffer);
    for (let i = 0; i < n; i++) {
      const v = values[i];
      if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) throw bad(i, `${dtype} value`);
      set(dv, i * bytes, v);
    }
    return out;
  };
  const bigs = (signed: boolean) => {
    const out = new Uint8Array(n * 8);
    const dv = new DataView(out.buffer);
    for (let i = 0; i < n; i++) {
      const v = values[i];
      let b: bigint;
      if (typeof v === 'bigint') b = v;
      else if (typeof v === 'number' && Number.isSafeInteger(v)) b = BigInt(v);
      else if (typeof v === 'string' && /^-?\d+$/.test(v)) b = BigInt(v);
      else throw bad(i, `${dtype} value`);
      if (signed ? b < -(2n ** 63n) || b >= 2n ** 63n : b < 0n || b >= 2n ** 64n) throw bad(i, `${dtype} value`);
      if (signed) dv.setBigInt64(i * 8, b, true);
      else dv.setBigUint64(i * 8, b, true);
    }
    return out;
  };
  const floats = (bytes: 4 | 8) => {
    const out = new Uint8Array(n * bytes);
    const dv = new DataView(out.buffer);
    for (let i = 0; i < n; i++) {
      const v = values[i];
      if (typeof v !== 'number') throw bad(i, `${dtype} value`);
      if (bytes === 4) dv.setFloat32(i * 4, v, true);
      else dv.setFloat64(i * 8, v, true);
    }
    return out;
  };
  switch (dtype) {
    case 'bool': {
      const out = new Uint8Array(n);
      for (let i = 0; i < n; i++) {
        const v = values[i];
        if (typeof v !== 'boolean' && v !== 0 && v !== 1) throw bad(i, 'BOOL value');
        out[i] = v ? 1 : 0;
      }
      return out;
    }
    case 'i8':
      return ints(1, -128, 127, (d, o, v) => d.setInt8(o, v));
    case 'i16':
      return ints(2, -32768, 32767, (d, o, v) => d.setInt16(o, v, true));
    case 'i32':
      return ints(4, -(2 ** 31), 2 ** 31 - 1, (d, o, v) => d.setInt32(o, v, true));
    case 'u8':
      return ints(1, 0, 255, (d, o, v) => d.setUint8(o, v));
    case 'u16':
      return ints(2, 0, 65535, (d, o, v) => d.setUint16(o, v, true));
    case 'u32':
      return ints(4, 0, 2 ** 32 - 1, (d, o, v) => d.setUint32(o, v, true));
    case 'i64':
      return bigs(true);
    case 'u64':
      return bigs(false);
    case 'f32':
      return floats(4);
    case 'f64':
      return floats(8);
    case 'BYTES':
      return encodeBytesElements(values, field);
    case 'f16':
    case 'bf16':
      throw invalidArgument(
        `${field}: ${dtype === 'f16' ? 'FP16' : 'BF16'} has no typed form; send it as raw binary data`,
      );
  }
}

/** The inverse, for JSON responses. 64-bit integers beyond 2^53 become strings. */
export function bytesToTyped(dtype: TensorDType, data: Uint8Array): unknown[] {
  const dv = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const out: unknown[] = [];
  const step = {
    bool: 1,
    i8: 1,
    u8: 1,
    i16: 2,
    u16: 2,
    f16: 2,
    bf16: 2,
    i32: 4,
    u32: 4,
    f32: 4,
    i64: 8,
    u64: 8,
    f64: 8,
  };
  if (dtype === 'BYTES') {
    let o = 0;
    while (o + 4 <= data.byteLength) {
      const len = dv.getUint32(o, true);
      out.push(Buffer.from(data.buffer, data.byteOffset + o + 4, len).toString('utf8'));
      o += 4 + len;
    }
    return out;
  }
  const s = step[dtype];
  for (let o = 0; o + s <= data.byteLength; o += s) {
    switch (dtype) {
      case 'bool':
        out.push(dv.getUint8(o) !== 0);
        break;
      case 'i8':
        out.push(dv.getInt8(o));
        break;
      case 'u8':
        out.push(dv.getUint8(o));
        break;
      case 'i16':
        out.push(dv.getInt16(o, true));
        break;
      case 'u16':
        out.push(dv.getUint16(o, true));
        break;
      case 'i32':
        out.push(dv.getInt32(o, true));
        break;
      case 'u32':
        out.push(dv.getUint32(o, true));
        break;
      case 'f32':
        out.push(dv.getFloat32(o, true));
        break;
      case 'f64':
        out.push(dv.getFloat64(o, true));
        break;
      case 'i64': {
        const b = dv.getBigInt64(o, true);
        out.push(b >= -(2n ** 53n) && b <= 2n ** 53n ? Number(b) : b.toString());
        break;
      }
      case 'u64': {
        const b = dv.getBigUint64(o, true);
        out.push(b <= 2n ** 53n ? Number(b) : b.toString());
        break;
      }
      case 'f16':
        out.push(halfToFloat(dv.getUint16(o, true)));
        break;
      case 'bf16':
        out.push(new Float32Array(new Uint32Array([dv.getUint16(o, true) << 16]).buffer)[0]);
        break;
    }
  }
  return out;
}

function halfToFloat(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const f = h & 0x3ff;
  if (e === 0) return s * 2 ** -14 * (f / 1024);
  if (e === 31) return f ? NaN : s * Infinity;
  return s * 2 ** (e - 15) * (1 + f / 1024);
}
