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

/**
 * Reads the signature of `@main` from StableHLO text. Returns null when the text has no parsable
 * public main (the plugin then remains the judge of the arguments).
 */
export function parseMainSignature(text: string): ProgramSignature | null {
  const at = text.search(/func\.func\s+(public\s+)?@main\s*\(/);
  if (at < 0) return null;
  const open = text.indexOf('(', at);
  const close = matching(text, open);
  if (close < 0) return null;
  const params: TensorType[] = [];
  for (const arg of splitTopLevel(text.slice(open + 1, close))) {
    const m = /^\s*%[\w$.-]+\s*:\s*(tensor<[^>]*>)/.exec(arg);
    const t = m ? parseTensorType(m[1]!) : null;
    if (!t) return null;
    params.push(t);
  }
  const rest = text.slice(close + 1);
  const arrow = /^\s*->\s*/.exec(rest);
  const results: TensorType[] = [];
  if (arrow) {
    const r = rest.slice(arrow[0].length);
    let list: string[];
    if (r.startsWith('(')) {
      const end = matching(r, 0);
      list = splitTopLevel(r.slice(1, end));
    } else {
      const m = /^tensor<[^>]*>/.exec(r);
      list = m ? [m[0]] : [];
    }
    for (const item of list) {
      const m = /tensor<[^>]*>/.exec(item);
      const t = m ? parseTensorType(m[0]) : null;
      if (!t) return null;
      results.push(t);
    }
  }
  return { parameters: params, results };
}

/** The signature of `main` as far as it can be read: from text, never from bytecode (null then). */
export function programSignature(code: Uint8Array): ProgramSignature | null {
  return isMlirBytecode(code)
    ? null
    : parseMainSignature(Buffer.from(code.buffer, code.byteOffset, code.byteLength).toString('utf8'));
}
