/**
 * Reads the two facts routing needs from a ModelInferRequest's bytes without decoding the rest:
 * the model name (field 1) and the batch extent of the first input (inputs = field 5, its shape
 * = field 3, leading dimension; hloserve's wire shapes put the batch axis first). The body is
 * then forwarded as it came, tensor bytes untouched.
 */

export interface InferPeek {
  readonly modelName: string;
  /**
   * Leading dimension of the first input, or 1 when the request has no shaped input; at most
   * MAX_ITEMS.
   */
  readonly items: number;
}

/**
 * The most items one request is counted as. Routing adds a request's items to its worker's load
 * and takes them off when it ends; an extent near 2^63 (a client's to send: the worker refuses it)
 * would swallow the other requests' items in that sum, and taking it off again would leave the
 * worker's load wrong for good. Far above any compiled batch, and far below where sums of
 * in-flight items stop being exact.
 */
export const MAX_ITEMS = 1 << 20;

class Reader {
  pos = 0;
  constructor(
    readonly buf: Uint8Array,
    readonly end = buf.length,
  ) {}
  varint(): number {
    let result = 0;
    let shift = 1;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw new Error('truncated varint');
      const b = this.buf[this.pos++]!;
      result += (b & 0x7f) * shift;
      if (b < 0x80) return result;
      shift *= 128;
    }
    throw new Error('varint too long');
  }
  skip(wireType: number): void {
    switch (wireType) {
      case 0:
        this.varint();
        return;
      case 1:
        this.pos += 8;
        break;
      case 2: {
        // Read the length first: `pos += varint()` would add to the pos before the varint.
        const len = this.varint();
        this.pos += len;
        break;
      }
      case 5:
        this.pos += 4;
        break;
      default:
        throw new Error(`unsupported wire type ${wireType}`);
    }
    if (this.pos > this.end) throw new Error('truncated field');
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: false });

/**
 * Model names decoded before, by their UTF-8 bytes: a request for a known model gets the same
 * string object back, whose hash the routing and metrics maps have already computed, instead of
 * a fresh string per request (decoding, then hashing it at every lookup). Bounded: past
 * NAMES_MAX distinct names (a client inventing names) new ones are decoded and not kept, and so is
 * a name longer than NAME_BYTES_MAX (a model name is a directory name; a client's megabyte "name"
 * kept 256 times would hold a quarter of a gigabyte).
 */
const NAMES_MAX = 256;
const NAME_BYTES_MAX = 1024;
const names = new Map<number, { readonly bytes: Uint8Array; readonly name: string }[]>();
let namesKept = 0;

/** The names kept and their bytes (tests). */
export function keptNames(): { readonly count: number; readonly bytes: number } {
  let bytes = 0;
  for (const list of names.values()) for (const e of list) bytes += e.bytes.byteLength;
  return { count: namesKept, bytes };
}

function modelNameAt(buf: Uint8Array, start: number, end: number): string {
  const len = end - start;
  // Length and first and last byte pick a short list; the bytes decide.
  const key = len * 65536 + (len > 0 ? buf[start]! * 256 + buf[end - 1]! : 0);
  const list = names.get(key);
  if (list !== undefined)
    for (const e of list) {
      let i = 0;
      while (i < len && e.bytes[i] === buf[start + i]) i++;
      if (i === len) return e.name;
    }
  const name = utf8.decode(buf.subarray(start, end));
  if (namesKept < NAMES_MAX && len <= NAME_BYTES_MAX) {
    namesKept++;
    const e = { bytes: new Uint8Array(buf.subarray(start, end)), name };
    if (list === undefined) names.set(key, [e]);
    else list.push(e);
  }
  return name;
}

function firstDim(buf: Uint8Array, start: number, end: number): number | null {
  const r = new Reader(buf, end);
  r.pos = start;
  while (r.pos < end) {
    const tag = r.varint();
    const field = Math.floor(tag / 8);
    const wt = tag & 7;
    if (field === 3 && wt === 2) {
      const len = r.varint();
      if (len === 0) return null;
      return r.varint();
    }
    if (field === 3 && wt === 0) return r.varint();
    r.skip(wt);
  }
  return null;
}

/** Throws on bytes that are not a protobuf message (the gateway answers INVALID_ARGUMENT). */
export function peekInfer(buf: Uint8Array): InferPeek {
  const r = new Reader(buf);
  let modelName = '';
  let items: number | null = null;
  while (r.pos < r.end) {
    const tag = r.varint();
    const field = Math.floor(tag / 8);
    const wt = tag & 7;
    if (field === 1 && wt === 2) {
      const len = r.varint();
      if (r.pos + len > r.end) throw new Error('truncated model_name');
      modelName = modelNameAt(buf, r.pos, r.pos + len);
      r.pos += len;
    } else if (field === 5 && wt === 2 && items === null) {
      const len = r.varint();
      if (r.pos + len > r.end) throw new Error('truncated input tensor');
      items = firstDim(buf, r.pos, r.pos + len);
      r.pos += len;
    } else if (field === 7 && wt === 2 && modelName !== '' && items !== null) {
      // Raw tensor contents come last; nothing routing needs follows them.
      break;
    } else {
      r.skip(wt);
    }
  }
  return { modelName, items: items !== null && items > 0 ? Math.min(items, MAX_ITEMS) : 1 };
}
