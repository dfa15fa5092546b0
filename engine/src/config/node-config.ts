/**
 * node.yaml: `model_repo`, a `global` settings block, and optional `workers` (one per device,
 * each deep-merged over `global`). Loading applies HLOSERVE_* environment overrides and returns
 * which ones took effect, because "why is it listening on that port" is answered by the startup
 * log or not at all.
 */
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { ServeError } from '@hloserve/common/errors';
import { ConfigContext, joinPath, MappingReader } from './config-reader.js';
import { describeValue, isMapping } from './describe-value.js';
import { RANGES } from './defaults.js';
import { applyEnvOverrides } from './env-overrides.js';
import { parseYamlText } from './yaml-text.js';
import type { LoadedNodeConfig, NodeConfig, WorkerConfig, WorkerSettings } from './types.js';
import { parseWorkerSettings, PORT_KEYS } from './worker-settings.js';

export type Env = Readonly<Record<string, string | undefined>>;

export interface BuildOptions {
  /** The node.yaml path, named in messages and used as the base of relative paths; null without a file. */
  readonly file?: string | null;
  /** Environment to read HLOSERVE_* overrides from; none when absent. */
  readonly env?: Env;
  /** Base of relative paths in environment values, and of the file's paths when there is no file. */
  readonly cwd?: string;
}

/** Name of the worker made up when node.yaml lists none. */
export const IMPLICIT_WORKER_NAME = 'worker0';

const WORKER_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

/** Reads and validates a node.yaml; `env` defaults to the process environment. */
export async function loadNodeConfig(path: string, env: Env = process.env): Promise<LoadedNodeConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new ServeError('HLO_ERR_CONFIG_INVALID', `${path}: cannot read: ${(err as Error).message}`, { cause: err });
  }
  return parseNodeConfig(text, { file: path, env, cwd: process.cwd() });
}

export function parseNodeConfig(text: string, options: BuildOptions & { readonly file: string }): LoadedNodeConfig {
  const yaml = parseYamlText(text);
  if (!yaml.ok) throw new ServeError('HLO_ERR_CONFIG_INVALID', `${options.file}: ${yaml.message}`);
  return buildNodeConfig(yaml.value ?? {}, options);
}

/** The built-in configuration (no file, no environment) serving `modelRepo`. */
export function defaultConfig(modelRepo: string): NodeConfig {
  return buildNodeConfig({ model_repo: modelRepo }, { file: null, env: {}, cwd: process.cwd() }).config;
}

/** The settings a named worker runs with; without a name, the first (often only) worker. */
export function workerSettings(config: NodeConfig, name?: string): WorkerSettings {
  const worker = name === undefined ? config.workers[0] : config.workers.find((w) => w.name === name);
  if (!worker) {
    throw new ServeError(
      'HLO_ERR_CONFIG_INVALID',
      `no worker named ${JSON.stringify(name)} in ${config.file ?? 'the configuration'} (have: ${config.workers.map((w) => w.name).join(', ')})`,
    );
  }
  return worker.settings;
}

/**
 * `serve` without --config: the built-in settings for `modelRepo` (the --model-repo flag), else
 * HLOSERVE_MODEL_REPO, else the examples; HLOSERVE_* variables override them as they do a file.
 * The flag beats HLOSERVE_MODEL_REPO, as a command line beats the environment.
 */
export function flagConfig(modelRepo: string | undefined, env: Env = process.env): LoadedNodeConfig {
  const cwd = process.cwd();
  const used = modelRepo === undefined ? env : { ...env, HLOSERVE_MODEL_REPO: undefined };
  return buildNodeConfig({ model_repo: resolve(cwd, modelRepo ?? 'examples/models') }, { file: null, env: used, cwd });
}

/** Validates an already-parsed node.yaml value (the CLI builds one from flags this way). */
export function buildNodeConfig(value: unknown, options: BuildOptions = {}): LoadedNodeConfig {
  const cwd = options.cwd ?? process.cwd();
  const file = options.file ? resolve(cwd, options.file) : null;
  const label = options.file ?? 'configuration';
  if (!isMapping(value)) {
    throw new ServeError(
      'HLO_ERR_CONFIG_INVALID',
      `${label}: expected a mapping at the top level, got ${describeValue(value)}`,
    );
  }
  const raw = structuredClone(value);
  const { applied, sources } = applyEnvOverrides(raw, options.env ?? {}, cwd);
  const ctx = new ConfigContext(label, sources);
  const baseDir = file ? dirname(file) : cwd;

  const top = new MappingReader(raw, '', ctx);
  const repo = top.string('model_repo', '', { nonEmpty: true });
  if (!repo) {
    throw ctx.error(
      'model_repo',
      'missing; set it to the directory holding the model bundles (relative to this file), or HLOSERVE_MODEL_REPO',
    );
  }
  const globalRaw = top.take('global') ?? {};
  const global = parseWorkerSettings(new MappingReader(globalRaw, 'global', ctx), baseDir);
  const workersRaw = top.take('workers');
  top.finish();

  const workers =
    workersRaw === undefined || workersRaw === null
      ? [{ name: IMPLICIT_WORKER_NAME, settings: global, implicit: true }]
      : parseWorkers(workersRaw, globalRaw, ctx, baseDir);
  checkPorts(workers, ctx);
  return { config: { file, modelRepo: resolve(baseDir, repo), global, workers }, appliedOverrides: applied };
}

/** Worker-entry shortcuts for the keys that differ per worker, and where they land. */
const SHORTCUTS: readonly (readonly [string, readonly [string, string]])[] = [
  ['device_ordinal', ['runtime', 'device_ordinal']],
  ['host', ['endpoints', 'host']],
  ['grpc_port', ['endpoints', 'grpc_port']],
  ['http_port', ['endpoints', 'http_port']],
  ['metrics_port', ['endpoints', 'metrics_port']],
  ['console_port', ['endpoints', 'console_port']],
];

function parseWorkers(value: unknown, globalRaw: unknown, ctx: ConfigContext, baseDir: string): WorkerConfig[] {
  if (!Array.isArray(value))
    throw ctx.error('workers', `expected a list of {name, ...} entries, got ${describeValue(value)}`);
  if (value.length === 0) throw ctx.error('workers', 'empty; list at least one worker, or leave workers out');
  const names = new Map<string, number>();
  return value.map((entry: unknown, i) => {
    const path = joinPath('workers', i);
    const r = new MappingReader(entry, path, ctx);
    const name = r.string('name', '');
    if (!WORKER_NAME.test(name)) {
      throw r.error('name', `expected a worker name (letters, digits, _ . -), got ${describeValue(r.take('name'))}`);
    }
    const first = names.get(name);
    if (first !== undefined) throw r.error('name', `"${name}" is also the name of workers[${first}]`);
    names.set(name, i);

    const override: Record<string, unknown> = {};
    for (const key of r.untakenKeys()) {
      if (!SHORTCUTS.some(([k]) => k === key)) override[key] = r.take(key);
    }
    for (const [key, [section, field]] of SHORTCUTS) {
      if (!r.has(key)) {
        r.take(key);
        continue;
      }
      // Checked here so that a bad value is reported where it was written.
      const v =
        key === 'host'
          ? r.string(key, '', { nonEmpty: true })
          : r.int(key, 0, key === 'device_ordinal' ? RANGES.nonNegativeInt : RANGES.port);
      const block = override[section];
      if (isMapping(block) && block[field] !== undefined) {
        throw r.error(key, `set either ${path}.${key} or ${path}.${section}.${field}, not both`);
      }
      override[section] = { ...(isMapping(block) ? block : {}), [field]: v };
    }
    const merged = deepMerge(globalRaw, override);
    return { name, settings: parseWorkerSettings(new MappingReader(merged, path, ctx), baseDir), implicit: false };
  });
}

/** Mappings merge key by key; lists and scalars in `over` replace those in `base`. */
export function deepMerge(base: unknown, over: unknown): unknown {
  if (!isMapping(base) || !isMapping(over)) return over === undefined ? base : over;
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) out[k] = deepMerge(base[k], v);
  return out;
}

/**
 * Ports are compared by number alone: workers of one node share the machine, and a wildcard
 * host collides with every address. 0 (OS-assigned) never collides.
 */
function checkPorts(workers: readonly WorkerConfig[], ctx: ConfigContext): void {
  const used = new Map<number, string>();
  workers.forEach((w, i) => {
    const prefix = w.implicit ? 'global' : joinPath('workers', i);
    for (const [key, field] of PORT_KEYS) {
      const port = w.settings.endpoints[field];
      if (port === 0) continue;
      const path = `${prefix}.endpoints.${key}`;
      const other = used.get(port);
      if (other)
        throw ctx.error(path, `port ${port} is also ${other}; every endpoint of every worker needs its own port`);
      used.set(port, path);
    }
  });
}
