/**
 * Default values and allowed ranges of every node.yaml key, in one place so that the parser,
 * the env overrides and docs/configuration.md cannot drift apart (a test checks the doc).
 * Ranges follow the reference (reactantserver.md §1.4).
 */
import { cacheDir as nativeCacheDir } from '@hloserve/native/plugin';
import type { Interval } from './config-reader.js';
import type {
  Allocator,
  CompileCacheConfig,
  ConsoleConfig,
  Discipline,
  EndpointsConfig,
  HooksConfig,
  LogLevel,
  ModelControlMode,
  ModelPolicy,
  Residency,
  RuntimeConfig,
  SchedulerConfig,
} from './types.js';

export const MODEL_CONTROL_MODES: readonly ModelControlMode[] = ['static', 'dynamic', 'explicit'];
export const DISCIPLINES: readonly Discipline[] = ['fair', 'fifo', 'edf'];
export const RESIDENCIES: readonly Residency[] = ['unpinned', 'system', 'device'];
export const ALLOCATORS: readonly Allocator[] = ['bfc', 'cuda_async', 'platform', 'default'];
export const LOG_LEVELS: readonly LogLevel[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];
/** runtime.plugin values that name a plugin rather than a file (see native/lib/plugin.ts). */
export const PLUGIN_NAMES: readonly string[] = ['cpu', 'cpu-openxla', 'cuda'];

/**
 * The default cache_dir, hloserve's state ($HLOSERVE_CACHE_DIR, else <install>/.cache). The fetched
 * plugins are installed software with their own setting ($HLOSERVE_PLUGIN_DIR, native/lib/plugin.ts).
 */
export function defaultCacheDir(): string {
  return nativeCacheDir();
}

export const GLOBAL_DEFAULTS = {
  modelControlMode: 'static' as ModelControlMode,
  modelPollSeconds: 15,
  modelsInclude: [] as readonly string[],
  /** How long an unload lets queued requests finish before answering them NOT_FOUND. */
  modelUnloadGraceSeconds: 5,
  /** How soon after a file event dynamic mode looks at the repository (and again to see it settled). */
  modelSettleSeconds: 0.25,
};

export const RUNTIME_DEFAULTS: RuntimeConfig = {
  plugin: 'cpu',
  deviceOrdinal: 0,
  cpuDeviceCount: 1,
  cpuAsynchronous: false,
  memoryFraction: 0.9,
  preallocate: false,
  allocator: 'bfc',
  weightCacheFraction: 1.0,
  weightCacheWiggleFraction: 0.1,
  weightCacheBytes: null,
  deviceArena: true,
};

export const COMPILE_CACHE_DEFAULTS: CompileCacheConfig = {
  maxBytes: 2 * 1024 ** 3,
};

export const SCHEDULER_DEFAULTS: SchedulerConfig = {
  discipline: 'fair',
  emaHalflifeSeconds: 30,
  recencyPenaltyCap: 0.25,
  coalescingDiscount: 0.1,
  costEmaAlpha: 0.2,
  maxQueueDepth: 1024,
  dispatchTimeoutSeconds: 30,
  maxQueueDelayUs: 0,
  coldHoldUs: 2000,
  models: {},
};

export const MODEL_POLICY_DEFAULTS: ModelPolicy = {
  weight: 1.0,
  residency: 'system',
  maxBatchSize: null,
  maxQueueDelayUs: null,
};

export const ENDPOINTS_DEFAULTS: EndpointsConfig = {
  host: '127.0.0.1',
  grpcPort: 8001,
  httpPort: 8000,
  metricsPort: 8002,
  consolePort: 8003,
  maxConcurrentRequests: 64,
  maxRecvMsgBytes: 268435456,
  maxSendMsgBytes: 268435456,
  maxJsonBytes: 67108864,
  httpRequestTimeoutSeconds: 300,
  httpHeadersTimeoutSeconds: 60,
  allowSharedMemory: true,
  tls: null,
};

export const CONSOLE_DEFAULTS: ConsoleConfig = {
  stateUrl: null,
  allowedOrigins: [],
  uploadMaxBytes: 8 * 2 ** 30,
  uploadMaxExpandedBytes: 16 * 2 ** 30,
};

export const HOOKS_DEFAULTS: HooksConfig = {
  enabled: true,
  threads: 2,
  timeoutMs: 5000,
  maxHeapMb: 256,
  maxBufferMb: 2048,
  maxQueued: 256,
};

export const LOG_LEVEL_DEFAULT: LogLevel = 'info';

export const RANGES = {
  positive: { min: 0, minOpen: true },
  nonNegativeInt: { min: 0 },
  positiveInt: { min: 1 },
  port: { min: 0, max: 65535 },
  /** (0, 1] */
  openZeroToOne: { min: 0, minOpen: true, max: 1 },
  /** [0, 1) */
  zeroToOpenOne: { min: 0, max: 1, maxOpen: true },
  /** [0, 1] */
  unit: { min: 0, max: 1 },
  hookThreads: { min: 1, max: 64 },
  hookHeapMb: { min: 16, max: 65536 },
  hookBufferMb: { min: 16, max: 1048576 },
  /** A day: a poll interval beyond this is a typo, not a setting. */
  pollSeconds: { min: 0, minOpen: true, max: 86400 },
  /** An unload that waits longer than an hour for its queue is stuck, not draining. */
  unloadGraceSeconds: { min: 0, max: 3600 },
  /** A copy into the repository is seen as settled within this long; beyond a minute, reloads lag. */
  settleSeconds: { min: 0.01, max: 60 },
  /** What setTimeout holds (common/src/timers.ts). */
  timerMs: { min: 1, max: 2147483647 },
  /** gRPC message limits are signed 32-bit in grpc-js. */
  messageBytes: { min: 1, max: 2 ** 31 - 1 },
} as const satisfies Record<string, Interval>;
