/**
 * What a hook's `ctx.log` writes: one JSON line per call on stderr, as the engine's own records
 * are (log.ts), with the engine's level and fields (the worker's name), the model and the request
 * id, so that a log shipper reads hook lines like any other. A hook is ordinary code and may log
 * in a loop: each line is cut at MAX_CHARS and a thread writes at most a burst of BURST lines,
 * then RATE a second; the lines dropped meanwhile are counted on the next line written.
 */
import { format } from 'node:util';
import type { Level } from '../log.js';

/** How the engine logs, for the hook threads to match. */
export interface HookLogSettings {
  readonly level: Level;
  readonly fields: Readonly<Record<string, unknown>>;
}

export const HOOK_LOG_DEFAULTS: HookLogSettings = { level: 'info', fields: {} };

const ORDER: Record<Level, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: 100 };
export const MAX_CHARS = 4096;
const BURST = 200;
const RATE = 50;

/** ctx.log(...args) logs at info; ctx.log.warn / .error / .debug at their levels. */
export interface HookLogger {
  (...args: unknown[]): void;
  debug(...args: unknown[]): void;
  warn(...args: unknown[]): void;
  error(...args: unknown[]): void;
}

export class HookLog {
  readonly #min: number;
  readonly #fields: Readonly<Record<string, unknown>>;
  readonly #write: (line: string) => void;
  readonly #now: () => number;
  #tokens = BURST;
  #at: number;
  /** Lines refused by the rate limit since the last one written. */
  #dropped = 0;

  constructor(
    settings: HookLogSettings,
    write: (line: string) => void = (l) => process.stderr.write(l),
    now: () => number = () => performance.now(),
  ) {
    this.#min = ORDER[settings.level];
    this.#fields = settings.fields;
    this.#write = write;
    this.#now = now;
    this.#at = now();
  }

  /** The logger of one call. */
  logger(model: string, requestId: string): HookLogger {
    const at =
      (level: Level) =>
      (...args: unknown[]) =>
        this.#emit(level, model, requestId, args);
    return Object.assign(at('info'), { debug: at('debug'), warn: at('warn'), error: at('error') });
  }

  #emit(level: Level, model: string, requestId: string, args: unknown[]): void {
    if (ORDER[level] < this.#min) return;
    const t = this.#now();
    this.#tokens = Math.min(BURST, this.#tokens + ((t - this.#at) / 1000) * RATE);
    this.#at = t;
    if (this.#tokens < 1) {
      this.#dropped++;
      return;
    }
    this.#tokens--;
    // format() runs no getter or Proxy trap; a value's own [inspect.custom] may throw: the hook's.
    let text = format(...args);
    if (text.length > MAX_CHARS) text = `${text.slice(0, MAX_CHARS)}... (${text.length} chars)`;
    const dropped = this.#dropped;
    this.#dropped = 0;
    const record = { level, time: new Date().toISOString(), ...this.#fields, msg: 'hook', model, requestId, text };
    this.#write(JSON.stringify(dropped > 0 ? { ...record, dropped } : record) + '\n');
  }
}
