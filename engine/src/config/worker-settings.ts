/**
 * The settings block a worker runs with: `global:` in node.yaml, or `global` deep-merged with
 * one `workers[]` entry. Every key is read through a MappingReader, so the set of keys accepted
 * is exactly the set read here.
 */
import { isAbsolute, resolve } from 'node:path';
import type { MappingReader } from './config-reader.js';
import { joinPath, MappingReader as Reader } from './config-reader.js';
import {
  ALLOCATORS,
  COMPILE_CACHE_DEFAULTS,
  CONSOLE_DEFAULTS,
  defaultCacheDir,
  DISCIPLINES,
  ENDPOINTS_DEFAULTS,
  GLOBAL_DEFAULTS,
  HOOKS_DEFAULTS,
  LOG_LEVEL_DEFAULT,
  LOG_LEVELS,
  MODEL_CONTROL_MODES,
  MODEL_POLICY_DEFAULTS,
  PLUGIN_NAMES,
  RANGES,
  RESIDENCIES,
  RUNTIME_DEFAULTS,
  SCHEDULER_DEFAULTS,
} from './defaults.js';
import type {
  CompileCacheConfig,
  ConsoleConfig,
  EndpointsConfig,
  HooksConfig,
  LoggingConfig,
  ModelPolicy,
  TlsConfig,
  RuntimeConfig,
  SchedulerConfig,
  WorkerSettings,
} from './types.js';

/** The keys a settings block may hold; also what a `workers[]` entry may override. */
export const SETTINGS_KEYS = [
  'cache_dir',
  'model_control_mode',
  'model_poll_seconds',
  'model_unload_grace_seconds',
  'model_settle_seconds',
  'models_include',
  'runtime',
  'compile_cache',
  'scheduler',
  'endpoints',
  'console',
  'hooks',
  'logging',
] as const;

/**
 * Parses a settings block and reports unknown keys. Relative paths are resolved against
 * `baseDir` (the node.yaml directory); values from the environment arrive already absolute.
 */
export function parseWorkerSettings(r: MappingReader, baseDir: string): WorkerSettings {
  const cacheDir = r.string('cache_dir', '', { nonEmpty: true });
  const settings: WorkerSettings = {
    cacheDir: cacheDir ? resolve(baseDir, cacheDir) : defaultCacheDir(),
    modelControlMode: r.oneOf('model_control_mode', MODEL_CONTROL_MODES, GLOBAL_DEFAULTS.modelControlMode),
    modelPollSeconds: r.number('model_poll_seconds', GLOBAL_DEFAULTS.modelPollSeconds, RANGES.pollSeconds),
    modelUnloadGraceSeconds: r.number(
      'model_unload_grace_seconds',
      GLOBAL_DEFAULTS.modelUnloadGraceSeconds,
      RANGES.unloadGraceSeconds,
    ),
    modelSettleSeconds: r.number('model_settle_seconds', GLOBAL_DEFAULTS.modelSettleSeconds, RANGES.settleSeconds),
    modelsInclude: r.stringList('models_include', GLOBAL_DEFAULTS.modelsInclude),
    runtime: parseRuntime(r.section('runtime'), baseDir),
    compileCache: parseCompileCache(r.section('compile_cache')),
    scheduler: parseScheduler(r.section('scheduler')),
    endpoints: parseEndpoints(r.section('endpoints'), baseDir),
    console: parseConsole(r.section('console')),
    hooks: parseHooks(r.section('hooks')),
    logging: parseLogging(r.section('logging')),
  };
  r.finish();
  return settings;
}

function parsePlugin(r: MappingReader, baseDir: string): string {
  const value = r.string('plugin', RUNTIME_DEFAULTS.plugin, { nonEmpty: true });
  if (PLUGIN_NAMES.includes(value)) return value;
  // A bare word that is not a known name is far more likely a typo ("cdua") than a file in cwd.
  if (value.includes('/') || value.endsWith('.so') || isAbsolute(value)) return resolve(baseDir, value);
  throw r.error(
    'plugin',
    `expected ${PLUGIN_NAMES.join(', ')} or a path to a PJRT plugin (.so), got ${JSON.stringify(value)}`,
  );
}

function parseRuntime(r: MappingReader, baseDir: string): RuntimeConfig {
  const d = RUNTIME_DEFAULTS;
  const runtime: RuntimeConfig = {
    plugin: parsePlugin(r, baseDir),
    deviceOrdinal: r.int('device_ordinal', d.deviceOrdinal, RANGES.nonNegativeInt),
    cpuDeviceCount: r.int('cpu_device_count', d.cpuDeviceCount, RANGES.positiveInt),
    cpuAsynchronous: r.bool('cpu_asynchronous', d.cpuAsynchronous),
    memoryFraction: r.number('memory_fraction', d.memoryFraction, RANGES.openZeroToOne),
    preallocate: r.bool('preallocate', d.preallocate),
    allocator: r.oneOf('allocator', ALLOCATORS, d.allocator),
    weightCacheFraction: r.number('weight_cache_fraction', d.weightCacheFraction, RANGES.unit),
    weightCacheWiggleFraction: r.number(
      'weight_cache_wiggle_fraction',
      d.weightCacheWiggleFraction,
      RANGES.zeroToOpenOne,
    ),
    weightCacheBytes: r.bytesOrNull('weight_cache_bytes', d.weightCacheBytes, RANGES.positiveInt),
    deviceArena: r.bool('device_arena', d.deviceArena),
  };
  r.finish();
  return runtime;
}

function parseCompileCache(r: MappingReader): CompileCacheConfig {
  const compileCache: CompileCacheConfig = {
    maxBytes: r.bytes('max_bytes', COMPILE_CACHE_DEFAULTS.maxBytes, RANGES.nonNegativeInt),
  };
  r.finish();
  return compileCache;
}

function parseScheduler(r: MappingReader): SchedulerConfig {
  const d = SCHEDULER_DEFAULTS;
  const scheduler: SchedulerConfig = {
    discipline: r.oneOf('discipline', DISCIPLINES, d.discipline),
    emaHalflifeSeconds: r.number('ema_halflife_seconds', d.emaHalflifeSeconds, RANGES.positive),
    recencyPenaltyCap: r.number('recency_penalty_cap', d.recencyPenaltyCap, RANGES.openZeroToOne),
    coalescingDiscount: r.number('coalescing_discount', d.coalescingDiscount, RANGES.zeroToOpenOne),
    costEmaAlpha: r.number('cost_ema_alpha', d.costEmaAlpha, RANGES.openZeroToOne),
    maxQueueDepth: r.int('max_queue_depth', d.maxQueueDepth, RANGES.positiveInt),
    dispatchTimeoutSeconds: r.number('dispatch_timeout_seconds', d.dispatchTimeoutSeconds, RANGES.positive),
    maxQueueDelayUs: r.int('max_queue_delay_us', d.maxQueueDelayUs, RANGES.nonNegativeInt),
    coldHoldUs: r.int('cold_hold_us', d.coldHoldUs, RANGES.nonNegativeInt),
    models: parseModelPolicies(r.section('models')),
  };
  r.finish();
  return scheduler;
}

function parseModelPolicies(r: MappingReader): Record<string, ModelPolicy> {
  const out: Record<string, ModelPolicy> = {};
  for (const name of r.untakenKeys()) {
    const m = new Reader(r.take(name), joinPath(r.path, name), r.ctx);
    const d = MODEL_POLICY_DEFAULTS;
    out[name] = {
      weight: m.number('weight', d.weight, RANGES.positive),
      residency: m.oneOf('residency', RESIDENCIES, d.residency),
      maxBatchSize: m.intOrNull('max_batch_size', d.maxBatchSize, RANGES.positiveInt),
      maxQueueDelayUs: m.intOrNull('max_queue_delay_us', d.maxQueueDelayUs, RANGES.nonNegativeInt),
    };
    m.finish();
  }
  return out;
}

/** `tls: {cert, key, client_ca?}`: paths only; the files are read and checked when the worker starts. */
function parseTls(r: MappingReader, baseDir: string): TlsConfig | null {
  if (!r.has('cert') && !r.has('key') && !r.has('client_ca')) {
    r.finish();
    return null;
  }
  const path = (key: string): string => {
    const v = r.string(key, '', { nonEmpty: true });
    if (!v) throw r.error(key, 'required when tls is set (a PEM file)');
    return resolve(baseDir, v);
  };
  const tls: TlsConfig = {
    certFile: path('cert'),
    keyFile: path('key'),
    clientCaFile: r.has('client_ca') ? path('client_ca') : null,
  };
  r.finish();
  return tls;
}

function parseConsole(r: MappingReader): ConsoleConfig {
  const d = CONSOLE_DEFAULTS;
  const stateUrl = r.string('state_url', '', { nonEmpty: true }) || d.stateUrl;
  if (stateUrl !== null && !/^(postgres(ql)?:\/\/|sqlite:)/.test(stateUrl))
    throw r.error('state_url', 'expected postgres://user:password@host/db or sqlite:PATH');
  const origins = r.stringList('allowed_origins', d.allowedOrigins);
  origins.forEach((o, i) => {
    if (!/^https?:\/\/[^/\s]+$/.test(o))
      throw r.ctx.error(
        joinPath(r.keyPath('allowed_origins'), i),
        `expected scheme://host[:port], got ${JSON.stringify(o)}`,
      );
  });
  const console_: ConsoleConfig = {
    stateUrl,
    allowedOrigins: origins,
    uploadMaxBytes: r.bytes('upload_max_bytes', d.uploadMaxBytes, RANGES.positiveInt),
    uploadMaxExpandedBytes: r.bytes('upload_max_expanded_bytes', d.uploadMaxExpandedBytes, RANGES.positiveInt),
  };
  r.finish();
  return console_;
}

function parseEndpoints(r: MappingReader, baseDir: string): EndpointsConfig {
  const d = ENDPOINTS_DEFAULTS;
  const endpoints: EndpointsConfig = {
    host: r.string('host', d.host, { nonEmpty: true }),
    grpcPort: r.int('grpc_port', d.grpcPort, RANGES.port),
    httpPort: r.int('http_port', d.httpPort, RANGES.port),
    metricsPort: r.int('metrics_port', d.metricsPort, RANGES.port),
    consolePort: r.int('console_port', d.consolePort, RANGES.port),
    maxConcurrentRequests: r.int('max_concurrent_requests', d.maxConcurrentRequests, RANGES.positiveInt),
    maxRecvMsgBytes: r.bytes('max_recv_msg_bytes', d.maxRecvMsgBytes, RANGES.messageBytes),
    maxSendMsgBytes: r.bytes('max_send_msg_bytes', d.maxSendMsgBytes, RANGES.messageBytes),
    maxJsonBytes: r.bytes('max_json_bytes', d.maxJsonBytes, RANGES.messageBytes),
    httpRequestTimeoutSeconds: r.number('http_request_timeout_seconds', d.httpRequestTimeoutSeconds, RANGES.positive),
    httpHeadersTimeoutSeconds: r.number('http_headers_timeout_seconds', d.httpHeadersTimeoutSeconds, RANGES.positive),
    allowSharedMemory: r.bool('allow_shared_memory', d.allowSharedMemory),
    tls: parseTls(r.section('tls'), baseDir),
  };
  r.finish();
  return endpoints;
}

function parseHooks(r: MappingReader): HooksConfig {
  const d = HOOKS_DEFAULTS;
  const hooks: HooksConfig = {
    enabled: r.bool('enabled', d.enabled),
    threads: r.int('threads', d.threads, RANGES.hookThreads),
    timeoutMs: r.int('timeout_ms', d.timeoutMs, RANGES.timerMs),
    maxHeapMb: r.int('max_heap_mb', d.maxHeapMb, RANGES.hookHeapMb),
    maxBufferMb: r.int('max_buffer_mb', d.maxBufferMb, RANGES.hookBufferMb),
    maxQueued: r.int('max_queued', d.maxQueued, RANGES.positiveInt),
  };
  r.finish();
  return hooks;
}

function parseLogging(r: MappingReader): LoggingConfig {
  const logging: LoggingConfig = { level: r.oneOf('level', LOG_LEVELS, LOG_LEVEL_DEFAULT) };
  r.finish();
  return logging;
}

/** The YAML paths of the four ports, for collision checks. */
export const PORT_KEYS = [
  ['grpc_port', 'grpcPort'],
  ['http_port', 'httpPort'],
  ['metrics_port', 'metricsPort'],
  ['console_port', 'consolePort'],
] as const satisfies readonly (readonly [string, keyof EndpointsConfig])[];
