import { invalidArgument, quote, shapeText } from '@hloserve/common/errors';
import { fixedElementByteSize, fromWireDatatype } from '../dtypes.js';
import type { TensorDType } from '../tensor.js';

/** Nesting of a tensor's `data` beyond which it is refused (a rank no tensor has). */
export const MAX_JSON_DEPTH = 64;
const MAX_ELEMENTS = 2 ** 40;

const OPEN = 0x5b; // [
const CLOSE = 0x5d; // ]
const COMMA = 0x2c;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const MINUS = 0x2d;
const DOT = 0x2e;

const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
/** Characters a JSON number token can hold. */
const isNumberChar = (c: number) => isDigit(c) || c === MINUS || c === DOT || c === 0x2b || c === 0x65 || c === 0x45;

/** 10^k for the exact fast path (10^22 is the largest power of ten a double holds exactly). */
const POW10 = Array.from({ length: 23 }, (_, k) => 10 ** k);

// Scratch for decimalQuotient's exact arithmetic (Dekker's products and Knuth's sums): a module
// holds them so that a number allocates nothing.
const SPLIT = 134217729; // 2^27 + 1
const bits = new Float64Array(1);
const words = new Uint32Array(bits.buffer);
const LOW = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1 ? 0 : 1;

/** a * b - fl(a * b), exactly (Dekker; a and b below 2^996). */
function productError(a: number, b: number, product: number): number {
  let c = SPLIT * a;
  const ah = c - (c - a);
  const al = a - ah;
  c = SPLIT * b;
  const bh = c - (c - b);
  const bl = b - bh;
  return ah * bh - product + ah * bl + al * bh + al * bl;
}

/** The next double above positive `x`, or below (toward zero) when `down`. */
function nextDouble(x: number, down: boolean): number {
  bits[0] = x;
  if (down) {
    if (words[LOW] === 0) words[1 - LOW]!--;
    words[LOW] = words[LOW]! - 1; // 0 wraps to 0xffffffff
  } else {
    if (words[LOW] === 0xffffffff) words[1 - LOW]!++;
    words[LOW] = words[LOW]! + 1; // 0xffffffff wraps to 0
  }
  return bits[0];
}

/**
 * A number past Clinger's fast path, the text body[s, e): 16 to 19 digits without an exponent
 * (a double or float32 printed in full, what JSON writers mostly print) exactly in two parts, the
 * rest (and those too near a tie) by Number() on its text; NaN when it is not a number. Apart
 * from the decoding loop so that the loop stays as small as it was for the numbers that do not
 * come here.
 */
function otherNumber(
  body: Uint8Array,
  buf: Buffer,
  s: number,
  e: number,
  neg: boolean,
  frac: number,
  simple: boolean,
): number {
  if (simple && frac <= 22) {
    const v = longDecimal(body, neg ? s + 1 : s, e, frac);
    if (!Number.isNaN(v)) return neg ? -v : v;
  }
  return Number(buf.toString('latin1', s, e));
}

/**
 * The digits in body[from, to) (a plain decimal: digits and at most one '.') over 10^frac,
 * correctly rounded, when it has at most 19 significant digits; NaN otherwise or near a tie.
 */
function longDecimal(body: Uint8Array, from: number, to: number, frac: number): number {
  let hi = 0;
  let lo = 0;
  let loDigits = 0;
  let significant = 0;
  for (let q = from; q < to; q++) {
    const d = body[q]! - 0x30;
    if (d < 0 || d > 9 || (significant === 0 && d === 0)) continue; // the '.', leading zeros
    if (significant < 15) hi = hi * 10 + d;
    else if (significant < 19) {
      lo = lo * 10 + d;
      loDigits++;
    } else return Number.NaN;
    significant++;
  }
  return decimalQuotient(hi, lo, loDigits, frac);
}

/**
 * (hi * 10^loDigits + lo) / 10^frac correctly rounded to a double, for hi < 10^15, loDigits <= 4,
 * frac <= 22; NaN when the quotient is too near a halfway point between two doubles to round
 * without the full algorithm (the caller then reads the text with Number()). JSON writers print
 * 16 and 17 digits for most doubles, and Clinger's fast path stops at 2^53 (under 16 digits):
 * the string per number that Number() needs was half the decoding time of such a tensor.
 *
 * The significand M is exact as s + t (one Dekker product, one exact sum); q1 = fl(s / P), the
 * remainder M - q1 * P is exact up to one rounding, and q2 = remainder / P, so q1 + q2 is within
 * |M / P| * 2^-100 of the quotient. Its rounding fl(q1 + q2) is then the quotient's unless their
 * sum lies within that distance of the midpoint between fl(q1 + q2) and its neighbour.
 */
function decimalQuotient(hi: number, lo: number, loDigits: number, frac: number): number {
  const scale = POW10[loDigits]!;
  const a = hi * scale;
  const b = productError(hi, scale, a);
  const s = a + lo;
  // Both parts are integers below 2^12 here (the rounding errors of a sum and a product of
  // integers below 2^64), so their sum is exact.
  const t = a - s + lo + b;
  const P = POW10[frac]!;
  const q1 = s / P;
  const c = q1 * P;
  const d = productError(q1, P, c);
  const q2 = (s - c + (t - d)) / P;
  const v = q1 + q2;
  const e = q1 - v + q2; // (q1 + q2) - v, exactly
  if (e === 0) return v;
  const half = Math.abs(nextDouble(v, e < 0) - v) / 2;
  return Math.abs(Math.abs(e) - half) <= v * 2 ** -90 ? Number.NaN : v;
}

/** The element count of a declared shape, checked: non-negative safe integers, a sane product. */
export function shapeElements(shape: readonly unknown[], field: string): number {
  let n = 1;
  for (let i = 0; i < shape.length; i++) {
    const d = shape[i];
    if (typeof d !== 'number' || !Number.isSafeInteger(d) || d < 0)
      throw invalidArgument(`${field}: shape[${i}] = ${quote(d)} is not a valid extent`);
    n *= d;
    if (n > MAX_ELEMENTS) throw invalidArgument(`${field}: shape ${shapeText(shape as number[])} is too large`);
  }
  return n;
}

/** Writes one element; `token` is the number's text, `value` its double (or the string's bytes). */
type Sink = {
  readonly dtype: TensorDType;
  number(i: number, value: number, start: number, end: number): void;
  literal(i: number, value: boolean): void;
  string(i: number, bytes: Uint8Array): void;
  finish(): Uint8Array;
};

/**
 * Decodes the JSON `data` of one tensor, bytes [start, end) of the body, straight into a buffer of
 * the declared datatype and shape. Iterative (no recursion, so no depth can overflow the stack),
 * bounded (nothing is allocated beyond what the declared shape needs, and the shape is refused
 * before allocation when the text cannot hold that many values), and strict: data is either flat
 * (one array of every element) or nested exactly as the shape, every row the same length, every
 * value finite and representable in the datatype.
 */
export function decodeJsonTensor(
  body: Uint8Array,
  start: number,
  end: number,
  datatype: string,
  shape: readonly number[],
  field: string,
): Uint8Array {
  const dtype = fromWireDatatype(datatype);
  if (dtype === undefined) throw invalidArgument(`${field}: unknown datatype ${quote(datatype)}`);
  if (dtype === 'f16' || dtype === 'bf16')
    throw invalidArgument(`${field}: ${datatype} has no JSON form; send it as binary data`);
  const elements = shapeElements(shape, field);
  // Every value takes at least one character and a separator: refuse a shape the text cannot fill
  // before allocating for it.
  if (elements > Math.max(1, (end - start + 1) / 2))
    throw invalidArgument(
      `${field}: data of ${end - start} bytes cannot hold the ${elements} values of shape ${shapeText(shape)}`,
    );
  const buf = Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const sink = makeSink(dtype, elements, buf, field);
  const rank = shape.length;
  // counts[d]: values seen so far in the open array at depth d (1-based).
  const counts = new Array<number>(MAX_JSON_DEPTH + 2).fill(0);
  let depth = 0;
  let leafDepth = -1; // depth at which values sit: 1 (flat) or rank (nested)
  let n = 0;
  let expectValue = true; // after '[' or ',' a value (or, after '[', a ']') must come
  let afterOpen = false;
  let p = start;
  const bad = (what: string) => invalidArgument(`${field}: ${what}`);
  const value = () => {
    if (depth === 0) throw bad('data must be an array');
    if (leafDepth === -1) {
      if (depth !== 1 && depth !== rank)
        throw bad(`data nested ${depth} deep does not match shape ${shapeText(shape)} (flat or nested as the shape)`);
      leafDepth = depth;
    } else if (depth !== leafDepth) throw bad('data mixes values and arrays at one level (ragged rows)');
    if (n >= elements) throw bad(`more values than the ${elements} of shape ${shapeText(shape)}`);
    counts[depth]!++;
  };
  while (p < end) {
    const c = body[p]!;
    if (isSpace(c)) {
      p++;
      continue;
    }
    if (c === OPEN) {
      if (!expectValue) throw bad(`unexpected '[' at byte ${p - start}`);
      if (depth > 0) {
        if (leafDepth !== -1 && depth >= leafDepth)
          throw bad('data mixes values and arrays at one level (ragged rows)');
        counts[depth]!++;
      }
      depth++;
      if (depth > MAX_JSON_DEPTH || (depth > 1 && depth > rank))
        throw bad(`data nested deeper than shape ${shapeText(shape)}`);
      counts[depth] = 0;
      expectValue = true;
      afterOpen = true;
      p++;
      continue;
    }
    if (c === CLOSE) {
      if (depth === 0 || (expectValue && !afterOpen)) throw bad(`unexpected ']' at byte ${p - start}`);
      // Nested data: every array at depth d < rank holds shape[d-1] arrays, at depth rank
      // shape[rank-1] values. Flat data: one array holding every value.
      if (leafDepth === rank && rank > 1) {
        if (counts[depth] !== shape[depth - 1])
          throw bad(
            `a row at depth ${depth} has ${counts[depth]} entries, shape ${shapeText(shape)} says ${shape[depth - 1]}`,
          );
      }
      depth--;
      expectValue = false;
      afterOpen = false;
      p++;
      if (depth === 0) break;
      continue;
    }
    if (c === COMMA) {
      if (expectValue || depth === 0) throw bad(`unexpected ',' at byte ${p - start}`);
      expectValue = true;
      afterOpen = false;
      p++;
      continue;
    }
    if (!expectValue) throw bad(`expected ',' or ']' at byte ${p - start}`);
    value();
    if (c === QUOTE) {
      let q = p + 1;
      let escaped = false;
      while (q < end && body[q] !== QUOTE) {
        if (body[q] === BACKSLASH) {
          escaped = true;
          q++;
        }
        q++;
      }
      if (q >= end) throw bad('unterminated string');
      let bytes: Uint8Array;
      if (escaped) {
        let s: unknown;
        try {
          s = JSON.parse(Buffer.from(body.buffer, body.byteOffset + p, q + 1 - p).toString('utf8'));
        } catch {
          throw bad(`invalid string at byte ${p - start}`);
        }
        bytes = Buffer.from(s as string, 'utf8');
      } else {
        bytes = body.subarray(p + 1, q);
      }
      sink.string(n, bytes);
      p = q + 1;
    } else if (c === 0x74 /* t */ || c === 0x66 /* f */ || c === 0x6e /* n */) {
      const word = c === 0x74 ? 'true' : c === 0x66 ? 'false' : 'null';
      for (let k = 0; k < word.length; k++)
        if (body[p + k] !== word.charCodeAt(k)) throw bad(`invalid value at byte ${p - start}`);
      if (word === 'null') throw bad(`null is not a valid ${datatype} value`);
      sink.literal(n, word === 'true');
      p += word.length;
    } else if (isNumberChar(c)) {
      const s = p;
      let neg = false;
      if (body[p] === MINUS) {
        neg = true;
        p++;
      }
      let m = 0;
      let frac = 0;
      let simple = true;
      let sawDigit = false;
      while (p < end && isDigit(body[p]!)) {
        m = m * 10 + (body[p]! - 0x30);
        sawDigit = true;
        p++;
      }
      if (p < end && body[p] === DOT) {
        p++;
        while (p < end && isDigit(body[p]!)) {
          m = m * 10 + (body[p]! - 0x30);
          frac++;
          p++;
        }
      }
      while (p < end && isNumberChar(body[p]!)) {
        simple = false;
        p++;
      }
      if (!sawDigit) throw bad(`invalid value at byte ${s - start}`);
      let v: number;
      // Clinger's fast path: an integer below 2^53 was accumulated exactly (a value past it
      // rounds to 2^53 or more, so it cannot pass), 10^frac is exact up to 10^22, and one IEEE
      // division of two exact doubles is correctly rounded: up to 15 digits, without a string.
      if (simple && m < 2 ** 53 && frac <= 22) v = (neg ? -m : m) / POW10[frac]!;
      else {
        v = otherNumber(body, buf, s, p, neg, frac, simple);
        if (Number.isNaN(v)) throw bad(`invalid number at byte ${s - start}`);
      }
      if (!Number.isFinite(v))
        throw bad(
          `value ${quote(Buffer.from(body.subarray(s, p)).toString('latin1'))} is beyond the range of a double`,
        );
      sink.number(n, v, s, p);
    } else {
      throw bad(`invalid value at byte ${p - start}`);
    }
    n++;
    expectValue = false;
    afterOpen = false;
  }
  if (depth !== 0) throw bad('data is not a closed array');
  for (; p < end; p++) if (!isSpace(body[p]!)) throw bad('trailing characters after data');
  if (leafDepth === -1 && elements !== 0 && n === 0) throw bad('data is empty');
  if (n !== elements) throw bad(`${n} values for shape ${shapeText(shape)} (${elements})`);
  return sink.finish();
}

function makeSink(dtype: TensorDType, elements: number, body: Buffer, field: string): Sink {
  const size = fixedElementByteSize(dtype);
  const out = size === null ? new Uint8Array(0) : new Uint8Array(elements * size);
  const dv = new DataView(out.buffer);
  const bad = (i: number, v: unknown) => invalidArgument(`${field}[${i}]: ${quote(v)} is not a valid ${dtype} value`);
  const noString = (i: number, b: Uint8Array) => {
    throw bad(i, Buffer.from(b.subarray(0, 80)).toString('utf8'));
  };
  const noLiteral = (i: number, v: boolean) => {
    throw bad(i, v);
  };
  const ints = (min: number, max: number, set: (o: number, v: number) => void, bytes: number): Sink => ({
    dtype,
    number(i, v) {
      if (!Number.isInteger(v) || v < min || v > max) throw bad(i, v);
      set(i * bytes, v);
    },
    literal: noLiteral,
    string: noString,
    finish: () => out,
  });
  const text = (s: number, e: number) => body.toString('latin1', s, e);
  const bigs = (signed: boolean): Sink => {
    const put = (i: number, b: bigint, shown: unknown) => {
      if (signed ? b < -(2n ** 63n) || b >= 2n ** 63n : b < 0n || b >= 2n ** 64n) throw bad(i, shown);
      if (signed) dv.setBigInt64(i * 8, b, true);
      else dv.setBigUint64(i * 8, b, true);
    };
    return {
      dtype,
      number(i, v, s, e) {
        const t = text(s, e);
        // Integers are read from their text, so values beyond 2^53 keep every digit.
        if (/^-?\d+$/.test(t)) put(i, BigInt(t), t);
        else if (Number.isSafeInteger(v)) put(i, BigInt(v), t);
        else throw bad(i, t);
      },
      literal: noLiteral,
      string(i, b) {
        const t = Buffer.from(b).toString('latin1');
        if (!/^-?\d{1,20}$/.test(t)) throw bad(i, t);
        put(i, BigInt(t), t);
      },
      finish: () => out,
    };
  };
  switch (dtype) {
    case 'bool':
      return {
        dtype,
        number(i, v) {
          if (v !== 0 && v !== 1) throw bad(i, v);
          out[i] = v;
        },
        literal(i, v) {
          out[i] = v ? 1 : 0;
        },
        string: noString,
        finish: () => out,
      };
    case 'i8':
      return ints(-128, 127, (o, v) => dv.setInt8(o, v), 1);
    case 'i16':
      return ints(-32768, 32767, (o, v) => dv.setInt16(o, v, true), 2);
    case 'i32':
      return ints(-(2 ** 31), 2 ** 31 - 1, (o, v) => dv.setInt32(o, v, true), 4);
    case 'u8':
      return ints(0, 255, (o, v) => dv.setUint8(o, v), 1);
    case 'u16':
      return ints(0, 65535, (o, v) => dv.setUint16(o, v, true), 2);
    case 'u32':
      return ints(0, 2 ** 32 - 1, (o, v) => dv.setUint32(o, v, true), 4);
    case 'i64':
      return bigs(true);
    case 'u64':
      return bigs(false);
    case 'f32': {
      const f = new Float32Array(out.buffer);
      return {
        dtype,
        number(i, v) {
          const x = Math.fround(v);
          // A double past FP32's range would be stored as Infinity: refused like any other overflow.
          if (!Number.isFinite(x)) throw bad(i, v);
          f[i] = x;
        },
        literal: noLiteral,
        string: noString,
        finish: () => out,
      };
    }
    case 'f64': {
      const f = new Float64Array(out.buffer);
      return {
        dtype,
        number(i, v) {
          f[i] = v;
        },
        literal: noLiteral,
        string: noString,
        finish: () => out,
      };
    }
    case 'BYTES': {
      const parts: Uint8Array[] = [];
      let total = 0;
      return {
        dtype,
        number: (i, v) => {
          throw bad(i, v);
        },
        literal: noLiteral,
        string(_i, b) {
          parts.push(b);
          total += 4 + b.byteLength;
        },
        finish() {
          const o = Buffer.allocUnsafeSlow(total); // its own ArrayBuffer: transferable from the parser thread
          let at = 0;
          for (const b of parts) {
            o.writeUInt32LE(b.byteLength, at);
            o.set(b, at + 4);
            at += 4 + b.byteLength;
          }
          return o;
        },
      };
    }
    case 'f16':
    case 'bf16':
      throw invalidArgument(`${field}: ${dtype} has no JSON form; send it as binary data`);
  }
}
