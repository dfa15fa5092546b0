/** A small structured logger: one JSON line per record on stderr, filtered by level. */
export type Level = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'silent';
const ORDER: Record<Level, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: 100 };

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
  /** The level below which records are dropped, and the fields every record carries. */
  readonly level: Level;
  readonly fields: Readonly<Record<string, unknown>>;
}

export function createLogger(
  level: Level = 'info',
  base: Record<string, unknown> = {},
  write: (line: string) => void = (l) => process.stderr.write(l),
): Logger {
  const min = ORDER[level];
  const emit = (lvl: Level, msg: string, fields?: Record<string, unknown>) => {
    if (ORDER[lvl] < min) return;
    write(JSON.stringify({ level: lvl, time: new Date().toISOString(), ...base, msg, ...fields }) + '\n');
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (f) => createLogger(level, { ...base, ...f }, write),
    level,
    fields: base,
  };
}
