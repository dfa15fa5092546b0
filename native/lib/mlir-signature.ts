import type { DType } from './dtype.js';

export interface TensorType {
  readonly dtype: DType;
  readonly shape: readonly number[]; // -1 for dynamic (`?`) dims
}

export interface ProgramSignature {
  readonly parameters: readonly TensorType[];
  readonly results: readonly TensorType[];
}

const ELEMENT: Record<string, DType> = {
  i1: 'bool',
  i8: 'i8',
  i16: 'i16',
  i32: 'i32',
  i64: 'i64',
  ui8: 'u8',
  ui16: 'u16',
  ui32: 'u32',
  ui64: 'u64',
  f16: 'f16',
  bf16: 'bf16',
  f32: 'f32',
  f64: 'f64',
};

/** True when `code` is MLIR bytecode (a StableHLO portable artifact) rather than text. */
export function isMlirBytecode(code: Uint8Array): boolean {
  return code.length >= 4 && code[0] === 0x4d && code[1] === 0x4c && code[2] === 0xef && code[3] === 0x52;
}

/** Parses `tensor<2x3xf32>` / `tensor<f32>`; null for anything else (tuples, tokens, unknown types). */
export function parseTensorType(text: string): TensorType | null {
  const m = /^tensor<([^>]*)>$/.exec(text.trim());
  if (!m) return null;
  const parts = m[1]!.split(',')[0]!.trim().split('x');
  const elem = ELEMENT[parts.pop()!.trim()];
  if (!elem) return null;
  const shape = parts.map((p) => (p === '?' ? -1 : Number(p)));
  if (shape.some((d) => !Number.isInteger(d))) return null;
  return { dtype: elem, shape };
}

function splitTopLevel(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === '<' || c === '(' || c === '{' || c === '[') depth++;
    else if (c === '>' || c === ')' || c === '}' || c === ']') depth--;
    else if (c === ',' && depth === 0) {
      out.push(s.slice(start, i));
      start = i + 1;
    }
  }
  if (s.slice(start).trim()) out.push(s.slice(start));
  return out;
}

function matching(s: string, open: number): number {
  let depth = 0;
  for (let i = open; i < s.length; i++) {
    if (s[i] === '(') depth++;
    else if (s[i] === ')' && --depth === 0) return i;
  }
  return -1;
}

const MAIN = /func\.func\s+(?:public\s+)?@main\s*\(/;

/**
 * What scanning text for `@main`'s signature found: the signature; no `@main` in the text; an
 * `@main` whose types cannot be read; or, for text that may go on, the index from which the text
 * must be kept to finish (`more`).
 */
export type MainScan =
  | { readonly state: 'read'; readonly signature: ProgramSignature }
  | { readonly state: 'absent' }
  | { readonly state: 'unreadable'; readonly why: string }
  | { readonly state: 'more'; readonly keepFrom: number };

/** A scan's answer once the text it needed has been seen. */
export type MainScanOutcome = Exclude<MainScan, { readonly state: 'more' }>;

const UNREADABLE_TYPES: MainScan = {
  state: 'unreadable',
  why: 'arguments and results must be tensor<...> of bool, integer or float (f16/bf16/f32/f64) types',
};

/** Characters kept between pieces while no `@main` has been seen: longer than any match's head. */
const SEARCH_OVERLAP = 4096;

/**
 * Scans `text` for `@main`'s signature. `complete` says that the text ends there; when it does not,
 * a signature cut off by the end of `text` is `more`, never `unreadable`.
 */
export function scanMainSignature(text: string, complete: boolean): MainScan {
  const found = MAIN.exec(text);
  if (!found) {
    return complete ? { state: 'absent' } : { state: 'more', keepFrom: Math.max(0, text.length - SEARCH_OVERLAP) };
  }
  // A match at the very end may still grow (`@main  (` split by a piece's end) without changing
  // what it captures; the scan goes on from it either way.
  const more: MainScan = { state: 'more', keepFrom: found.index };
  const open = found.index + found[0].length - 1;
  const close = matching(text, open);
  if (close < 0) return complete ? UNREADABLE_TYPES : more;
  const params: TensorType[] = [];
  for (const arg of splitTopLevel(text.slice(open + 1, close))) {
    const m = /^\s*%[\w$.-]+\s*:\s*(tensor<[^>]*>)/.exec(arg);
    const t = m ? parseTensorType(m[1]!) : null;
    if (!t) return UNREADABLE_TYPES;
    params.push(t);
  }
  const rest = text.slice(close + 1);
  const arrow = /^\s*->\s*/.exec(rest);
  if (!arrow) {
    // Whitespace or a lone `-` at the end may be the start of `->`.
    if (!complete && /^\s*-?$/.test(rest)) return more;
    return { state: 'read', signature: { parameters: params, results: [] } };
  }
  const r = rest.slice(arrow[0].length);
  let list: string[];
  if (r.startsWith('(')) {
    const end = matching(r, 0);
    if (end < 0) return complete ? UNREADABLE_TYPES : more;
    list = splitTopLevel(r.slice(1, end));
  } else {
    const m = /^tensor<[^>]*>/.exec(r);
    if (!m) return !complete && !r.includes('>') && 'tensor<'.startsWith(r.slice(0, 7)) ? more : UNREADABLE_TYPES;
    list = [m[0]];
  }
  const results: TensorType[] = [];
  for (const item of list) {
    const m = /tensor<[^>]*>/.exec(item);
    const t = m ? parseTensorType(m[0]) : null;
    if (!t) return UNREADABLE_TYPES;
    results.push(t);
  }
  return { state: 'read', signature: { parameters: params, results } };
}

/** The most text a signature may take from its `func.func` on: 20,000 arguments, and then some. */
export const MAIN_SIGNATURE_MAX_CHARS = 8 * 2 ** 20;

/**
 * Finds `@main`'s signature in text that arrives in pieces (a file read a slice at a time), holding
 * only the text it still needs: a module's constants can be hundreds of MB, and decoding and
 * searching all of it at once held the event loop for hundreds of ms (and past V8's longest string,
 * failed).
 */
export class MainSignatureScanner {
  #text = '';

  /** The next piece; `last` when the text ends with it. Null while more text is needed. */
  push(piece: string, last: boolean): MainScanOutcome | null {
    const text = this.#text + piece;
    const scan = scanMainSignature(text, last);
    if (scan.state !== 'more') {
      this.#text = '';
      return scan;
    }
    if (text.length - scan.keepFrom > MAIN_SIGNATURE_MAX_CHARS) {
      this.#text = '';
      return { state: 'unreadable', why: `its signature runs past ${MAIN_SIGNATURE_MAX_CHARS} characters` };
    }
    this.#text = text.slice(scan.keepFrom);
    return null;
  }
}

/** Bytes decoded per piece when the signature is read from a module in memory. */
const SCAN_SLICE_BYTES = 2 ** 20;

/** Scans UTF-8 bytes a slice at a time, stopping as soon as the signature has been read. */
export function scanMainSignatureBytes(code: Uint8Array, sliceBytes = SCAN_SLICE_BYTES): MainScanOutcome {
  const decoder = new TextDecoder();
  const scanner = new MainSignatureScanner();
  for (let at = 0; ; at += sliceBytes) {
    const end = Math.min(code.byteLength, at + sliceBytes);
    const last = end === code.byteLength;
    const found = scanner.push(decoder.decode(code.subarray(at, end), { stream: !last }), last);
    if (found) return found;
  }
}

/**
 * Reads the signature of `@main` from StableHLO text. Returns null when the text has no parsable
 * public main (the plugin then remains the judge of the arguments).
 */
export function parseMainSignature(text: string): ProgramSignature | null {
  const scan = scanMainSignature(text, true);
  return scan.state === 'read' ? scan.signature : null;
}

/** The signature of `main` as far as it can be read: from text, never from bytecode (null then). */
export function programSignature(code: Uint8Array): ProgramSignature | null {
  if (isMlirBytecode(code)) return null;
  const scan = scanMainSignatureBytes(code);
  return scan.state === 'read' ? scan.signature : null;
}
