import { invalidArgument } from '@hloserve/common/errors';
import { MAX_JSON_DEPTH } from './json-tensor.js';

/** Where one input's `data` value lies in the body: bytes [start, end). */
export interface DataRange {
  readonly start: number;
  readonly end: number;
}

export interface JsonSkeleton {
  /** The document with every `inputs[i].data` value replaced by null: small, safe to JSON.parse. */
  readonly doc: unknown;
  /** inputs index -> the byte range of its `data` value. */
  readonly data: ReadonlyMap<number, DataRange>;
}

const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

interface Frame {
  readonly array: boolean;
  key: string | null;
  index: number;
}

const NULL = Buffer.from('null');

/**
 * Splits a KServe JSON infer document into its small part (names, shapes, parameters), parsed
 * with JSON.parse, and the byte ranges of its tensor `data` values, which are left for
 * decodeJsonTensor to read straight into typed buffers: the values of a large tensor never become
 * JS objects. Iterative, with a nesting limit, so no document can overflow the stack.
 */
export function scanInferJson(body: Uint8Array, end: number): JsonSkeleton {
  const data = new Map<number, DataRange>();
  const parts: Uint8Array[] = [];
  let copied = 0;
  const stack: Frame[] = [];
  let p = 0;
  const bad = (what: string) => invalidArgument(`request body is not valid JSON: ${what} at byte ${p}`);
  const buf = Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const skipSpace = () => {
    while (p < end && isSpace(body[p]!)) p++;
  };
  /** Skips a string starting at p (a quote); returns its text when `wanted`. */
  const string = (wanted: boolean): string | null => {
    const s = p;
    let escaped = false;
    p++;
    while (p < end && body[p] !== 0x22) {
      if (body[p] === 0x5c) {
        escaped = true;
        p++;
      }
      p++;
    }
    if (p >= end) throw bad('unterminated string');
    p++;
    if (!wanted) return null;
    const raw = Buffer.from(body.buffer, body.byteOffset + s, p - s);
    if (!escaped) return raw.toString('utf8', 1, raw.byteLength - 1);
    try {
      return JSON.parse(raw.toString('utf8')) as string;
    } catch {
      throw bad('invalid string');
    }
  };
  /** Skips any value starting at p, however nested, without recursion: one tight pass over the bytes. */
  const skipValue = () => {
    skipSpace();
    if (p >= end) throw bad('unexpected end');
    const first = body[p]!;
    if (first !== 0x5b && first !== 0x7b) {
      if (first === 0x22) string(false);
      else while (p < end && !isSpace(body[p]!) && body[p] !== 0x2c && body[p] !== 0x5d && body[p] !== 0x7d) p++;
      return;
    }
    if (first === 0x5b) {
      // An array of numbers, flat or nested (a tensor's data, mostly): its brackets are found with
      // memchr (Buffer.indexOf), and once its end is known, so is that no '{' or '"' lies inside
      // (one could hide a bracket); otherwise the walk below. 1.2 µs where the walk took 40 µs
      // over a 784-value tensor. Each search stops at the next bracket, inside the array or just
      // past its end (a bracket search past the last one goes on to the next '[' of the body, which
      // the next data value begins with), so over a body the searches stay linear.
      let depth = 1;
      let at = p + 1;
      // The next ']' and '[' at or after `at`: -1 none, -2 not looked for yet. Each is looked for
      // again only once passed, so a row is read once for each.
      let close = -2;
      let open = -2;
      while (depth > 0) {
        if (close === -2 || (close !== -1 && close < at)) close = buf.indexOf(0x5d, at);
        if (close === -1 || close >= end) break;
        if (open === -2 || (open !== -1 && open < at)) open = buf.indexOf(0x5b, at);
        if (open !== -1 && open < close) {
          if (++depth > MAX_JSON_DEPTH) break;
          at = open + 1;
        } else {
          depth--;
          at = close + 1;
        }
      }
      if (depth === 0) {
        const inner = buf.subarray(p + 1, at - 1);
        if (inner.indexOf(0x7b) === -1 && inner.indexOf(0x22) === -1) {
          p = at;
          return;
        }
      }
    }
    let depth = 0;
    for (; p < end; p++) {
      const c = body[p]!;
      if (c === 0x5b || c === 0x7b) depth++;
      else if (c === 0x5d || c === 0x7d) {
        if (--depth === 0) {
          p++;
          return;
        }
      } else if (c === 0x22) {
        for (p++; p < end && body[p] !== 0x22; p++) if (body[p] === 0x5c) p++;
      }
    }
    throw bad('unexpected end');
  };
  const atData = () =>
    stack.length === 3 &&
    !stack[0]!.array &&
    stack[0]!.key === 'inputs' &&
    stack[1]!.array &&
    !stack[2]!.array &&
    stack[2]!.key === 'data';
  // One value per turn: open containers push a frame, scalars are skipped.
  let expectValue = true;
  for (;;) {
    skipSpace();
    if (p >= end) break;
    const top = stack[stack.length - 1];
    const c = body[p]!;
    if (!expectValue) {
      if (!top) throw bad('trailing characters');
      if (c === 0x2c) {
        p++;
        skipSpace();
        if (top.array) {
          top.index++;
          expectValue = true;
        } else {
          if (body[p] !== 0x22) throw bad('expected a key');
          top.key = string(true);
          skipSpace();
          if (body[p] !== 0x3a) throw bad("expected ':'");
          p++;
          expectValue = true;
        }
        continue;
      }
      if ((c === 0x5d && top.array) || (c === 0x7d && !top.array)) {
        stack.pop();
        p++;
        continue;
      }
      throw bad(`unexpected '${String.fromCharCode(c)}'`);
    }
    if (atData()) {
      const start = p;
      skipValue();
      data.set(stack[1]!.index, { start, end: p });
      parts.push(body.subarray(copied, start), NULL);
      copied = p;
      expectValue = false;
      continue;
    }
    if (c === 0x7b || c === 0x5b) {
      if (stack.length >= MAX_JSON_DEPTH) throw bad(`nesting deeper than ${MAX_JSON_DEPTH}`);
      const frame: Frame = { array: c === 0x5b, key: null, index: 0 };
      stack.push(frame);
      p++;
      skipSpace();
      if (body[p] === (frame.array ? 0x5d : 0x7d)) {
        stack.pop();
        p++;
        expectValue = false;
        continue;
      }
      if (!frame.array) {
        if (body[p] !== 0x22) throw bad('expected a key');
        frame.key = string(true);
        skipSpace();
        if (body[p] !== 0x3a) throw bad("expected ':'");
        p++;
      }
      continue;
    }
    if (c === 0x5d || c === 0x7d) throw bad('unexpected close');
    if (c === 0x22) string(false);
    else while (p < end && !isSpace(body[p]!) && body[p] !== 0x2c && body[p] !== 0x5d && body[p] !== 0x7d) p++;
    expectValue = false;
  }
  if (stack.length > 0) throw bad('unexpected end');
  parts.push(body.subarray(copied, end));
  const text = Buffer.concat(parts).toString('utf8');
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw invalidArgument(`request body is not valid JSON: ${(err as Error).message.slice(0, 200)}`);
  }
  return { doc, data };
}
