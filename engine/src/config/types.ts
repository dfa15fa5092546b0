/**
 * The typed node configuration. YAML keys are snake_case (`max_queue_depth`) and map one to one
 * onto these camelCase fields; docs/configuration.md is the reference for both. Everything here
 * is fully resolved: defaults applied, paths absolute, env overrides merged, ranges checked.
 */

import type { Discipline, ModelControlMode, Residency } from '@hloserve/common/control-api';

// The API shows these values as configured, so they are defined once with the API's shapes.
export type { Discipline, ModelControlMode, Residency };
/** XLA GPU allocator choices (the CUDA plugin's `allocator` create option). */
export type Allocator = 'bfc' | 'cuda_async' | 'platform' | 'default';
export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'silent';

export interface RuntimeConfig {
  /** 'cpu', 'cpu-openxla', 'cuda', or an absolute path to a PJRT plugin (.so). */
  readonly plugin: string;
  readonly deviceOrdinal: number;
  /** CPU plugin only: how many CPU devices the client creates. */
  readonly cpuDeviceCount: number;
  /** CPU plugin only: executions on the client's own thread pool instead of the launching thread. */
  readonly cpuAsynchronous: boolean;
  /** CUDA only: share of device memory XLA's allocator may use, (0, 1]. */
  readonly memoryFraction: number;
  /** CUDA only: grab the allocator pool at start instead of on demand. */
  readonly preallocate: boolean;
  readonly allocator: Allocator;
  /** Share of the device memory left after the runtime's own use that weights may take, [0, 1]. */
  readonly weightCacheFraction: number;
  /** Headroom kept free of weights for activations, as a share of the cache size, [0, 1). */
  readonly weightCacheWiggleFraction: number;
  /** Explicit weight-cache size; null sizes it from device memory stats (unlimited without stats, e.g. on CPU). */
  readonly weightCacheBytes: number | null;
  /**
   * Where device memory is host memory (the CPU plugin) and the cache has a budget: load weights
   * into memory the worker maps once and reuses, instead of a fresh allocation per load.
   */
  readonly deviceArena: boolean;
}

export interface ModelPolicy {
  /** Share of device time under the fair discipline, > 0. */
  readonly weight: number;
  readonly residency: Residency;
  /** Cap on the batch planned for this model (null: the largest compiled size). */
  readonly maxBatchSize: number | null;
  /** Per-model batching window (null: the scheduler's max_queue_delay_us). */
  readonly maxQueueDelayUs: number | null;
}

export interface SchedulerConfig {
  readonly discipline: Discipline;
  readonly emaHalflifeSeconds: number;
  readonly recencyPenaltyCap: number;
  readonly coalescingDiscount: number;
  readonly costEmaAlpha: number;
  readonly maxQueueDepth: number;
  readonly dispatchTimeoutSeconds: number;
  /** How long a batch may wait for more requests before dispatch; 0 dispatches at once. */
  readonly maxQueueDelayUs: number;
  /** How long a model whose weights are not resident may wait behind cache hits; 0 never holds. */
  readonly coldHoldUs: number;
  /** Per-model policies, keyed by model name (keys kept exactly as written). */
  readonly models: Readonly<Record<string, ModelPolicy>>;
}

export interface EndpointsConfig {
  readonly host: string;
  /** 0 lets the OS pick a free port (tests); never a collision. */
  readonly grpcPort: number;
  readonly httpPort: number;
  readonly metricsPort: number;
  readonly consolePort: number;
  readonly maxConcurrentRequests: number;
  readonly maxRecvMsgBytes: number;
  readonly maxSendMsgBytes: number;
  /** Largest JSON part of an HTTP request (below maxRecvMsgBytes: JSON costs CPU to decode). */
  readonly maxJsonBytes: number;
  /** An HTTP request (headers and body) must have arrived within this. */
  readonly httpRequestTimeoutSeconds: number;
  readonly httpHeadersTimeoutSeconds: number;
  readonly allowSharedMemory: boolean;
  /** TLS on every listener of this worker (gRPC, HTTP, metrics, console); null: plaintext. */
  readonly tls: TlsConfig | null;
}

/** PEM files, absolute; read and checked at start (engine/src/tls/tls-material.ts). */
export interface TlsConfig {
  readonly certFile: string;
  readonly keyFile: string;
  /** When set, clients must present a certificate this CA signed (mutual TLS). */
  readonly clientCaFile: string | null;
}

/** The console's listener: where its operations state lives and who may open its live feed. */
export interface ConsoleConfig {
  /** postgres://... or sqlite:PATH; null: SQLite under cache_dir. */
  readonly stateUrl: string | null;
  /** Origins besides the console's own that may open the live feed (scheme://host[:port]). */
  readonly allowedOrigins: readonly string[];
  /** The largest bundle archive an upload may send. */
  readonly uploadMaxBytes: number;
  /** The most an upload's files may add up to once expanded (and so the largest one file). */
  readonly uploadMaxExpandedBytes: number;
}

/** Bundle hooks (model.js / model.mjs / model.ts): code that runs inside the server with its rights. */
export interface HooksConfig {
  /** False refuses every bundle that has a hooks file (meta models included). */
  readonly enabled: boolean;
  /** Worker threads for preprocess / postprocess; meta models' run() has as many again. */
  readonly threads: number;
  /** Per hook call, milliseconds; the request's deadline also applies. */
  readonly timeoutMs: number;
  /** Heap limit of each hook thread, MiB. */
  readonly maxHeapMb: number;
  /** Limit on the ArrayBuffers (typed arrays, Buffers) each hook thread holds, MiB: outside its heap. */
  readonly maxBufferMb: number;
  /** Calls waiting for a busy pool at most; beyond, RESOURCE_EXHAUSTED. */
  readonly maxQueued: number;
}

export interface CompileCacheConfig {
  /** Upper bound on the cache's bytes on disk; 0 turns the cache off. */
  readonly maxBytes: number;
}

export interface LoggingConfig {
  readonly level: LogLevel;
}

/** What one worker process runs with: the `global` block, merged with its `workers[]` entry. */
export interface WorkerSettings {
  /** Absolute. Operations state and the compiled-executable cache live here. */
  readonly cacheDir: string;
  readonly modelControlMode: ModelControlMode;
  readonly modelPollSeconds: number;
  /** How long an unload lets queued requests finish before answering them NOT_FOUND. */
  readonly modelUnloadGraceSeconds: number;
  /** dynamic mode: how soon after a file event the repository is looked at, and again to see it settled. */
  readonly modelSettleSeconds: number;
  /** Only these models are loaded; empty means every bundle in the repository. */
  readonly modelsInclude: readonly string[];
  readonly runtime: RuntimeConfig;
  /** The compiled-executable cache, in `<cacheDir>/executables`. */
  readonly compileCache: CompileCacheConfig;
  readonly scheduler: SchedulerConfig;
  readonly endpoints: EndpointsConfig;
  readonly console: ConsoleConfig;
  readonly hooks: HooksConfig;
  readonly logging: LoggingConfig;
}

export interface WorkerConfig {
  readonly name: string;
  readonly settings: WorkerSettings;
  /** True for the single worker made up when the file lists none. */
  readonly implicit: boolean;
}

export interface NodeConfig {
  /** The node.yaml it came from (absolute), or null for a built-in default. */
  readonly file: string | null;
  /** Absolute. */
  readonly modelRepo: string;
  readonly global: WorkerSettings;
  /** At least one: the file's `workers`, or one implicit worker running `global`. */
  readonly workers: readonly WorkerConfig[];
}

/** An environment variable that changed the configuration, for the startup log. */
export interface AppliedOverride {
  readonly variable: string;
  /** The YAML path it set, e.g. `global.scheduler.discipline`. */
  readonly path: string;
  /** The variable's text as given. */
  readonly value: string;
}

export interface LoadedNodeConfig {
  readonly config: NodeConfig;
  readonly appliedOverrides: readonly AppliedOverride[];
}
