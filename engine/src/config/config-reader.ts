/**
 * Reading a YAML mapping field by field. Each accessor consumes its key, so whatever is left at
 * `finish()` is a key nobody reads: an error naming its full path, with the closest known key
 * suggested. Typos (`disciplin:`) otherwise fall back to a default silently, the worst kind of
 * config bug. Values that came from an environment variable are reported under that variable.
 */
import { ServeError } from '@hloserve/common/errors';
import { describeValue, isMapping } from './describe-value.js';

export class ConfigContext {
  constructor(
    /** The YAML file (or a label such as `defaults`), named first in messages. */
    readonly file: string,
    /** YAML path -> environment variable that supplied its value. */
    readonly envSources: ReadonlyMap<string, string> = new Map(),
  ) {}

  error(path: string, message: string): ServeError {
    const variable = this.envSources.get(path);
    const where = variable ? `${variable} (${path})` : `${this.file}: ${path}`;
    return new ServeError('HLO_ERR_CONFIG_INVALID', `${where}: ${message}`);
  }
}

/** A numeric interval; open ends exclude the bound. */
export interface Interval {
  readonly min?: number;
  readonly max?: number;
  readonly minOpen?: boolean;
  readonly maxOpen?: boolean;
}

export function formatInterval(r: Interval): string {
  const lo = r.min === undefined ? '(-inf' : `${r.minOpen ? '(' : '['}${r.min}`;
  const hi = r.max === undefined ? 'inf)' : `${r.max}${r.maxOpen ? ')' : ']'}`;
  return `${lo}, ${hi}`;
}

function inInterval(x: number, r: Interval): boolean {
  if (r.min !== undefined && (r.minOpen ? x <= r.min : x < r.min)) return false;
  if (r.max !== undefined && (r.maxOpen ? x >= r.max : x > r.max)) return false;
  return true;
}

const BYTE_UNITS: Readonly<Record<string, number>> = {
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  tb: 1e12,
  kib: 2 ** 10,
  mib: 2 ** 20,
  gib: 2 ** 30,
  tib: 2 ** 40,
};

/** `268435456`, `"256MiB"`, `"1.5 GB"` -> bytes; null when the text is not a size. */
export function parseByteSize(value: unknown): number | null {
  if (typeof value === 'number') return Number.isSafeInteger(value) ? value : null;
  if (typeof value !== 'string') return null;
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]+)?\s*$/i.exec(value);
  if (!m) return null;
  const unit = BYTE_UNITS[(m[2] ?? 'b').toLowerCase()];
  if (unit === undefined) return null;
  const bytes = Number(m[1]) * unit;
  return Number.isSafeInteger(bytes) ? bytes : null;
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return row[b.length]!;
}

export function joinPath(parent: string, key: string | number): string {
  if (typeof key === 'number') return `${parent}[${key}]`;
  return parent ? `${parent}.${key}` : key;
}

export class MappingReader {
  private readonly raw: Record<string, unknown>;
  private readonly known = new Set<string>();

  constructor(
    raw: unknown,
    readonly path: string,
    readonly ctx: ConfigContext,
  ) {
    if (raw === undefined || raw === null) this.raw = {};
    else if (isMapping(raw)) this.raw = raw;
    else throw ctx.error(path || '(top level)', `expected a mapping, got ${describeValue(raw)}`);
  }

  keyPath(key: string): string {
    return joinPath(this.path, key);
  }

  error(key: string, message: string): ServeError {
    return this.ctx.error(this.keyPath(key), message);
  }

  /** The raw value (undefined when absent); marks the key as known. */
  take(key: string): unknown {
    this.known.add(key);
    return this.raw[key];
  }

  has(key: string): boolean {
    return this.raw[key] !== undefined && this.raw[key] !== null;
  }

  /** Keys present but never taken; the ones left are what `finish` reports. */
  untakenKeys(): string[] {
    return Object.keys(this.raw).filter((k) => !this.known.has(k));
  }

  finish(): void {
    const unknown = this.untakenKeys()[0];
    if (unknown === undefined) return;
    const best = [...this.known].map((k) => ({ k, d: editDistance(unknown, k) })).sort((a, b) => a.d - b.d)[0];
    const hint = best && best.d <= Math.max(2, Math.floor(unknown.length / 3)) ? ` (did you mean "${best.k}"?)` : '';
    throw this.error(unknown, `unknown key${hint}`);
  }

  section(key: string): MappingReader {
    return new MappingReader(this.take(key), this.keyPath(key), this.ctx);
  }

  string(key: string, fallback: string, opts: { nonEmpty?: boolean } = {}): string {
    const v = this.take(key);
    if (v === undefined || v === null) return fallback;
    if (typeof v !== 'string' || (opts.nonEmpty && v === '')) {
      throw this.error(key, `expected a ${opts.nonEmpty ? 'non-empty ' : ''}string, got ${describeValue(v)}`);
    }
    return v;
  }

  oneOf<T extends string>(key: string, values: readonly T[], fallback: T): T {
    const v = this.take(key);
    if (v === undefined || v === null) return fallback;
    if (typeof v !== 'string' || !(values as readonly string[]).includes(v)) {
      throw this.error(key, `expected one of ${values.join(' | ')}, got ${describeValue(v)}`);
    }
    return v as T;
  }

  bool(key: string, fallback: boolean): boolean {
    const v = this.take(key);
    if (v === undefined || v === null) return fallback;
    if (typeof v !== 'boolean') throw this.error(key, `expected true or false, got ${describeValue(v)}`);
    return v;
  }

  number(key: string, fallback: number, range: Interval): number {
    return this.numeric(key, fallback, range, false);
  }

  int(key: string, fallback: number, range: Interval): number {
    return this.numeric(key, fallback, range, true);
  }

  /** Like `int`, but an explicit `null` means "not set" (the consumer's own default applies). */
  intOrNull(key: string, fallback: number | null, range: Interval): number | null {
    const present = this.raw[key];
    if (present === undefined || present === null) {
      this.take(key);
      return present === null ? null : fallback;
    }
    return this.int(key, 0, range);
  }

  private numeric(key: string, fallback: number, range: Interval, integer: boolean): number {
    const v = this.take(key);
    if (v === undefined || v === null) return fallback;
    const ok = typeof v === 'number' && Number.isFinite(v) && (!integer || Number.isInteger(v)) && inInterval(v, range);
    if (!ok) {
      const what = integer ? 'an integer' : 'a number';
      throw this.error(key, `expected ${what} in ${formatInterval(range)}, got ${describeValue(v)}`);
    }
    return v;
  }

  /** A byte count: an integer, or a string with a unit (`256MiB`, `1.5GB`). */
  bytes(key: string, fallback: number, range: Interval): number {
    return this.bytesOrNull(key, fallback, range, false) ?? fallback;
  }

  /** A byte count where an explicit `null` means "not set". */
  bytesOrNull(key: string, fallback: number | null, range: Interval, nullable = true): number | null {
    const v = this.take(key);
    if (v === undefined || (v === null && !nullable)) return fallback;
    if (v === null) return null;
    const n = parseByteSize(v);
    if (n === null || !inInterval(n, range)) {
      throw this.error(
        key,
        `expected a byte count in ${formatInterval(range)} (an integer, or e.g. "256MiB"), got ${describeValue(v)}`,
      );
    }
    return n;
  }

  stringList(key: string, fallback: readonly string[]): string[] {
    const v = this.take(key);
    if (v === undefined || v === null) return [...fallback];
    if (!Array.isArray(v)) throw this.error(key, `expected a list of strings, got ${describeValue(v)}`);
    v.forEach((item: unknown, i) => {
      if (typeof item !== 'string' || item === '') {
        throw this.ctx.error(joinPath(this.keyPath(key), i), `expected a non-empty string, got ${describeValue(item)}`);
      }
    });
    return v as string[];
  }
}
