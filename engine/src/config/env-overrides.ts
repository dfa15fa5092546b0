/**
 * Environment overrides `HLOSERVE_<SECTION>_<FIELD>`, from an explicit table rather than by
 * splitting names (fields contain underscores: WEIGHT_CACHE_WIGGLE_FRACTION). They set the
 * `global` layer of node.yaml, so a `workers[]` entry that sets the same key still wins: a
 * variable given to a supervisor must not give every worker the same port.
 */
import { isAbsolute, resolve } from 'node:path';
import { ServeError } from '@hloserve/common/errors';
import { isMapping } from './describe-value.js';
import { PLUGIN_NAMES } from './defaults.js';
import type { AppliedOverride } from './types.js';

/** How a variable's text becomes a YAML value (the settings parser then checks its range). */
export type EnvValueKind = 'string' | 'path' | 'plugin' | 'int' | 'number' | 'bool' | 'list' | 'csv' | 'bytes';

export interface EnvOverrideSpec {
  readonly variable: string;
  /** YAML path, e.g. ['global', 'runtime', 'plugin']. */
  readonly path: readonly string[];
  readonly kind: EnvValueKind;
}

const PREFIX = 'HLOSERVE_';

function spec(section: string | null, field: string, kind: EnvValueKind): EnvOverrideSpec {
  const variable = PREFIX + (section ? `${section}_${field}` : field).toUpperCase();
  return { variable, path: section ? ['global', section, field] : ['global', field], kind };
}

export const ENV_OVERRIDES: readonly EnvOverrideSpec[] = [
  { variable: 'HLOSERVE_MODEL_REPO', path: ['model_repo'], kind: 'path' },
  spec(null, 'cache_dir', 'path'),
  spec(null, 'model_control_mode', 'string'),
  spec(null, 'model_poll_seconds', 'number'),
  spec(null, 'model_unload_grace_seconds', 'number'),
  spec(null, 'model_settle_seconds', 'number'),
  spec(null, 'models_include', 'list'),
  spec('runtime', 'plugin', 'plugin'),
  spec('runtime', 'device_ordinal', 'int'),
  spec('runtime', 'cpu_device_count', 'int'),
  spec('runtime', 'cpu_asynchronous', 'bool'),
  spec('runtime', 'memory_fraction', 'number'),
  spec('runtime', 'preallocate', 'bool'),
  spec('runtime', 'allocator', 'string'),
  spec('runtime', 'weight_cache_fraction', 'number'),
  spec('runtime', 'weight_cache_wiggle_fraction', 'number'),
  spec('runtime', 'weight_cache_bytes', 'bytes'),
  spec('runtime', 'device_arena', 'bool'),
  spec('compile_cache', 'max_bytes', 'bytes'),
  spec('scheduler', 'discipline', 'string'),
  spec('scheduler', 'ema_halflife_seconds', 'number'),
  spec('scheduler', 'recency_penalty_cap', 'number'),
  spec('scheduler', 'coalescing_discount', 'number'),
  spec('scheduler', 'cost_ema_alpha', 'number'),
  spec('scheduler', 'max_queue_depth', 'int'),
  spec('scheduler', 'dispatch_timeout_seconds', 'number'),
  spec('scheduler', 'max_queue_delay_us', 'int'),
  spec('scheduler', 'cold_hold_us', 'int'),
  spec('endpoints', 'host', 'string'),
  spec('endpoints', 'grpc_port', 'int'),
  spec('endpoints', 'http_port', 'int'),
  spec('endpoints', 'metrics_port', 'int'),
  spec('endpoints', 'console_port', 'int'),
  spec('endpoints', 'max_concurrent_requests', 'int'),
  spec('endpoints', 'max_recv_msg_bytes', 'bytes'),
  spec('endpoints', 'max_send_msg_bytes', 'bytes'),
  spec('endpoints', 'max_json_bytes', 'bytes'),
  spec('endpoints', 'http_request_timeout_seconds', 'number'),
  spec('endpoints', 'http_headers_timeout_seconds', 'number'),
  spec('endpoints', 'allow_shared_memory', 'bool'),
  spec('console', 'state_url', 'string'),
  spec('console', 'allowed_origins', 'csv'),
  spec('console', 'upload_max_bytes', 'bytes'),
  spec('console', 'upload_max_expanded_bytes', 'bytes'),
  spec('hooks', 'enabled', 'bool'),
  spec('hooks', 'threads', 'int'),
  spec('hooks', 'timeout_ms', 'int'),
  spec('hooks', 'max_heap_mb', 'int'),
  spec('hooks', 'max_buffer_mb', 'int'),
  spec('hooks', 'max_queued', 'int'),
  spec('logging', 'level', 'string'),
];

/**
 * Older names, read when the table's own name is unset: they predate the console section and
 * deployments set them.
 */
export const ENV_ALIASES: Readonly<Record<string, string>> = {
  HLOSERVE_CONSOLE_STATE_URL: 'HLOSERVE_STATE_URL',
  HLOSERVE_CONSOLE_ALLOWED_ORIGINS: 'HLOSERVE_CONSOLE_ORIGINS',
};

/**
 * Variables under these prefixes must be in the table: a misspelt override would otherwise be
 * ignored without a word. Other HLOSERVE_* names (HLOSERVE_CUDA_PLUGIN, HLOSERVE_TEST) belong
 * to other parts of the system and are left alone.
 */
const CHECKED_PREFIXES = [
  'HLOSERVE_RUNTIME_',
  'HLOSERVE_COMPILE_CACHE_',
  'HLOSERVE_SCHEDULER_',
  'HLOSERVE_ENDPOINTS_',
  'HLOSERVE_HOOKS_',
  'HLOSERVE_LOGGING_',
];

const TRUE_WORDS = ['1', 'true', 'yes', 'on'];
const FALSE_WORDS = ['0', 'false', 'no', 'off'];

export interface EnvOverrideResult {
  readonly applied: readonly AppliedOverride[];
  /** Dotted YAML path -> variable, so later range errors name the variable. */
  readonly sources: ReadonlyMap<string, string>;
}

function envError(variable: string, message: string): ServeError {
  return new ServeError('HLO_ERR_CONFIG_INVALID', `${variable}: ${message}`);
}

/** The YAML value for a variable's text; throws naming the variable when it cannot be one. */
export function envValue(s: EnvOverrideSpec, text: string, cwd: string): unknown {
  const t = text.trim();
  switch (s.kind) {
    case 'string':
      return t;
    case 'path':
      return resolve(cwd, t);
    case 'plugin':
      return PLUGIN_NAMES.includes(t) || !(t.includes('/') || t.endsWith('.so') || isAbsolute(t)) ? t : resolve(cwd, t);
    case 'int':
      if (!/^[+-]?\d+$/.test(t)) throw envError(s.variable, `expected an integer, got ${JSON.stringify(text)}`);
      return Number(t);
    case 'number':
      if (t === '' || !Number.isFinite(Number(t)))
        throw envError(s.variable, `expected a number, got ${JSON.stringify(text)}`);
      return Number(t);
    case 'bool': {
      const w = t.toLowerCase();
      if (TRUE_WORDS.includes(w)) return true;
      if (FALSE_WORDS.includes(w)) return false;
      throw envError(
        s.variable,
        `expected ${TRUE_WORDS.join('/')} or ${FALSE_WORDS.join('/')}, got ${JSON.stringify(text)}`,
      );
    }
    case 'list':
      // Comma or colon separated (the reference used colons); model names contain neither.
      return t
        .split(/[,:]/)
        .map((x) => x.trim())
        .filter((x) => x !== '');
    case 'csv':
      // Commas only: origins hold colons (https://host:8443).
      return t
        .split(',')
        .map((x) => x.trim())
        .filter((x) => x !== '');
    case 'bytes':
      return ['null', 'none', 'auto'].includes(t.toLowerCase()) ? null : /^\d+$/.test(t) ? Number(t) : t;
  }
}

/**
 * Writes the overrides found in `env` into `raw` (a parsed node.yaml, modified in place).
 * Empty variables count as unset, as `FOO=` in a compose file usually means.
 */
export function applyEnvOverrides(
  raw: Record<string, unknown>,
  env: Readonly<Record<string, string | undefined>>,
  cwd: string,
): EnvOverrideResult {
  const known = new Set(ENV_OVERRIDES.map((s) => s.variable));
  for (const name of Object.keys(env).sort()) {
    if (!known.has(name) && CHECKED_PREFIXES.some((p) => name.startsWith(p)) && env[name]) {
      throw envError(name, `not a known setting; known variables: ${ENV_OVERRIDES.map((s) => s.variable).join(', ')}`);
    }
  }
  const applied: AppliedOverride[] = [];
  const sources = new Map<string, string>();
  for (const entry of ENV_OVERRIDES) {
    const alias = ENV_ALIASES[entry.variable];
    const own = env[entry.variable];
    const s = (own === undefined || own.trim() === '') && alias && env[alias] ? { ...entry, variable: alias } : entry;
    const text = env[s.variable];
    if (text === undefined || text.trim() === '') continue;
    const value = envValue(s, text, cwd);
    let node: Record<string, unknown> | null = raw;
    for (const key of s.path.slice(0, -1)) {
      if (node[key] === undefined || node[key] === null) node[key] = {};
      const next: unknown = node[key];
      // A section that is not a mapping is the file's error; leave it for the parser to report.
      node = isMapping(next) ? next : null;
      if (!node) break;
    }
    if (!node) continue;
    node[s.path[s.path.length - 1]!] = value;
    const path = s.path.join('.');
    applied.push({ variable: s.variable, path, value: text });
    sources.set(path, s.variable);
  }
  return { applied, sources };
}
