/**
 * HPACK (RFC 7541): a decoder with the dynamic table and Huffman-coded literals, for whatever a
 * peer's encoder chooses, and a stateless encoder (static-table indices where an entry matches,
 * literals without indexing otherwise, never Huffman) whose output for a fixed header list is
 * the same bytes every time, so answers can use blocks encoded once.
 */
import { huffmanDecode } from './huffman.js';

/** A header list in wire order: name, value, name, value, ... (names lower-case). */
export type HeaderList = string[];

/** RFC 7541 Appendix A. */
const STATIC: ReadonlyArray<readonly [string, string]> = [
  [':authority', ''],
  [':method', 'GET'],
  [':method', 'POST'],
  [':path', '/'],
  [':path', '/index.html'],
  [':scheme', 'http'],
  [':scheme', 'https'],
  [':status', '200'],
  [':status', '204'],
  [':status', '206'],
  [':status', '304'],
  [':status', '400'],
  [':status', '404'],
  [':status', '500'],
  ['accept-charset', ''],
  ['accept-encoding', 'gzip, deflate'],
  ['accept-language', ''],
  ['accept-ranges', ''],
  ['accept', ''],
  ['access-control-allow-origin', ''],
  ['age', ''],
  ['allow', ''],
  ['authorization', ''],
  ['cache-control', ''],
  ['content-disposition', ''],
  ['content-encoding', ''],
  ['content-language', ''],
  ['content-length', ''],
  ['content-location', ''],
  ['content-range', ''],
  ['content-type', ''],
  ['cookie', ''],
  ['date', ''],
  ['etag', ''],
  ['expect', ''],
  ['expires', ''],
  ['from', ''],
  ['host', ''],
  ['if-match', ''],
  ['if-modified-since', ''],
  ['if-none-match', ''],
  ['if-range', ''],
  ['if-unmodified-since', ''],
  ['last-modified', ''],
  ['link', ''],
  ['location', ''],
  ['max-forwards', ''],
  ['proxy-authenticate', ''],
  ['proxy-authorization', ''],
  ['range', ''],
  ['referer', ''],
  ['refresh', ''],
  ['retry-after', ''],
  ['server', ''],
  ['set-cookie', ''],
  ['strict-transport-security', ''],
  ['transfer-encoding', ''],
  ['user-agent', ''],
  ['vary', ''],
  ['via', ''],
  ['www-authenticate', ''],
];

/** The table size a decoder starts with and this gateway advertises (SETTINGS_HEADER_TABLE_SIZE). */
export const DEFAULT_TABLE_SIZE = 4096;

export class HpackError extends Error {}

const EMPTY = Buffer.alloc(0);

/** Decodes header blocks of one direction of one connection (the dynamic table is per direction). */
export class HpackDecoder {
  /** Newest entry first, as the index counts them. */
  private entries: [string, string][] = [];
  private size = 0;
  private maxSize: number;

  /**
   * @param limit the SETTINGS_HEADER_TABLE_SIZE this side advertised: the peer's size updates may not exceed it.
   * @param maxListBytes a header list larger than this (RFC sizes: name + value + 32 each) is refused.
   */
  constructor(
    private readonly limit = DEFAULT_TABLE_SIZE,
    private readonly maxListBytes = 64 * 1024,
  ) {
    this.maxSize = limit;
  }

  // The block being decoded and the read position: fields rather than closures over locals, so
  // a decode (three per forwarded call) allocates its list and strings and nothing else.
  private block: Buffer = EMPTY;
  private p = 0;
  private listBytes = 0;

  decode(block: Buffer): HeaderList {
    const out: HeaderList = [];
    this.block = block;
    this.p = 0;
    this.listBytes = 0;
    const end = block.length;
    let sawField = false;
    try {
      while (this.p < end) {
        const b = block[this.p]!;
        if (b & 0x80) {
          // Indexed field.
          const e = this.at(this.int(7));
          this.push(out, e[0], e[1]);
          sawField = true;
        } else if (b & 0x40) {
          // Literal with incremental indexing.
          const idx = this.int(6);
          const name = idx === 0 ? this.str() : this.at(idx)[0];
          const value = this.str();
          this.add(name, value);
          this.push(out, name, value);
          sawField = true;
        } else if (b & 0x20) {
          // Dynamic table size update: only before the first field of a block.
          if (sawField) throw new HpackError('table size update after a field');
          const n = this.int(5);
          if (n > this.limit) throw new HpackError(`table size update to ${n} exceeds ${this.limit}`);
          this.maxSize = n;
          this.evict(0);
        } else {
          // Literal without indexing (0000) or never indexed (0001).
          const idx = this.int(4);
          const name = idx === 0 ? this.str() : this.at(idx)[0];
          this.push(out, name, this.str());
          sawField = true;
        }
      }
    } finally {
      this.block = EMPTY;
    }
    return out;
  }

  private int(prefixBits: number): number {
    const block = this.block;
    const end = block.length;
    if (this.p >= end) throw new HpackError('truncated integer');
    const mask = (1 << prefixBits) - 1;
    let v = block[this.p++]! & mask;
    if (v < mask) return v;
    let m = 0;
    for (;;) {
      if (this.p >= end) throw new HpackError('truncated integer');
      const b = block[this.p++]!;
      v += (b & 0x7f) * 2 ** m;
      m += 7;
      if (v > 0x7fffffff) throw new HpackError('integer overflow');
      if ((b & 0x80) === 0) return v;
    }
  }

  private str(): string {
    const block = this.block;
    const end = block.length;
    if (this.p >= end) throw new HpackError('truncated string');
    const huff = (block[this.p]! & 0x80) !== 0;
    const len = this.int(7);
    const p = this.p;
    if (p + len > end) throw new HpackError('truncated string');
    const s = huff ? huffmanDecodeChecked(block, p, p + len) : block.toString('latin1', p, p + len);
    this.p = p + len;
    return s;
  }

  private push(out: HeaderList, name: string, value: string): void {
    this.listBytes += name.length + value.length + 32;
    if (this.listBytes > this.maxListBytes) throw new HpackError(`header list larger than ${this.maxListBytes} bytes`);
    out.push(name, value);
  }

  private at(index: number): readonly [string, string] {
    if (index === 0) throw new HpackError('index 0');
    if (index <= STATIC.length) return STATIC[index - 1]!;
    const e = this.entries[index - STATIC.length - 1];
    if (!e) throw new HpackError(`index ${index} is not in the table`);
    return e;
  }

  private add(name: string, value: string): void {
    const s = name.length + value.length + 32;
    this.evict(s);
    if (s > this.maxSize) return; // an entry larger than the table empties it and is not added
    this.entries.unshift([name, value]);
    this.size += s;
  }

  /** Evicts the oldest entries until `room` more bytes fit. */
  private evict(room: number): void {
    while (this.size + room > this.maxSize && this.entries.length > 0) {
      const [n, v] = this.entries.pop()!;
      this.size -= n.length + v.length + 32;
    }
  }

  /** For tests: the table's entries, newest first, and its size. */
  get table(): { entries: ReadonlyArray<readonly [string, string]>; size: number } {
    return { entries: this.entries, size: this.size };
  }
}

function huffmanDecodeChecked(b: Buffer, start: number, end: number): string {
  try {
    return huffmanDecode(b, start, end);
  } catch (err) {
    throw new HpackError((err as Error).message);
  }
}

const STATIC_FULL = new Map<string, number>();
const STATIC_NAME = new Map<string, number>();
STATIC.forEach(([n, v], i) => {
  if (!STATIC_FULL.has(`${n}\0${v}`)) STATIC_FULL.set(`${n}\0${v}`, i + 1);
  if (!STATIC_NAME.has(n)) STATIC_NAME.set(n, i + 1);
});

function intLength(v: number, prefixBits: number): number {
  const mask = (1 << prefixBits) - 1;
  if (v < mask) return 1;
  let n = 2;
  for (v -= mask; v >= 128; v = Math.floor(v / 128)) n++;
  return n;
}

function writeInt(out: Buffer, off: number, v: number, prefixBits: number, first: number): number {
  const mask = (1 << prefixBits) - 1;
  if (v < mask) {
    out[off] = first | v;
    return off + 1;
  }
  out[off++] = first | mask;
  for (v -= mask; v >= 128; v = Math.floor(v / 128)) out[off++] = (v % 128) | 0x80;
  out[off++] = v;
  return off;
}

/**
 * Encodes a header list without touching any dynamic table (so one encoder state serves every
 * connection). `sizeUpdateZero` starts the block with a table size update to 0, which a peer
 * whose SETTINGS lowered the table size expects before our next block.
 */
export function encodeHeaders(list: HeaderList, sizeUpdateZero = false): Buffer {
  let n = sizeUpdateZero ? 1 : 0;
  const plan: number[] = [];
  for (let i = 0; i < list.length; i += 2) {
    const name = list[i]!;
    const value = list[i + 1]!;
    const full = STATIC_FULL.get(`${name}\0${value}`);
    if (full !== undefined) {
      plan.push(full, 0);
      n += intLength(full, 7);
      continue;
    }
    const nameIdx = STATIC_NAME.get(name) ?? 0;
    plan.push(0, nameIdx);
    const vlen = Buffer.byteLength(value, 'latin1');
    n += intLength(nameIdx, 4) + intLength(vlen, 7) + vlen;
    if (nameIdx === 0) n += intLength(name.length, 7) + name.length;
  }
  const out = Buffer.allocUnsafe(n);
  let off = 0;
  if (sizeUpdateZero) out[off++] = 0x20;
  for (let i = 0, j = 0; i < list.length; i += 2, j += 2) {
    const full = plan[j]!;
    if (full !== 0) {
      off = writeInt(out, off, full, 7, 0x80);
      continue;
    }
    const nameIdx = plan[j + 1]!;
    off = writeInt(out, off, nameIdx, 4, 0x00);
    if (nameIdx === 0) {
      const name = list[i]!;
      off = writeInt(out, off, name.length, 7, 0);
      off += out.write(name, off, 'latin1');
    }
    const value = list[i + 1]!;
    off = writeInt(out, off, Buffer.byteLength(value, 'latin1'), 7, 0);
    off += out.write(value, off, 'latin1');
  }
  return out;
}
