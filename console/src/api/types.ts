/**
 * The control API's shapes, mirroring engine/src/control/api/schemas.ts (its JSON schemas; the
 * OpenAPI document is GET /api/v1/openapi.json). One file, so aligning with the engine is one edit.
 * REST lists answer `{data, seq}`; seq is the live feed's position for that resource.
 */

export type Scope = 'viewer' | 'operator' | 'admin';
export type Residency = 'unpinned' | 'system' | 'device';
export type Discipline = 'fair' | 'fifo' | 'edf';
export type ModelControlMode = 'static' | 'dynamic' | 'explicit';

export interface Envelope<T> {
  readonly data: T;
  readonly seq?: number;
}

/** GET /session: who the presented token is. */
export interface Session {
  readonly actor: string;
  readonly tokenId: string | null;
  readonly name: string;
  readonly scope: Scope;
}

export interface DeviceMemory {
  readonly ordinal: number;
  readonly platform: string;
  /** Device memory the runtime reports (null where it reports none, e.g. the CPU plugin). */
  readonly totalBytes: number | null;
  /** Weight-cache budget for evictable weights (null: unlimited). */
  readonly budgetBytes: number | null;
  readonly residentBytes: number;
  readonly pinnedBytes: number;
  readonly arenaBytes: number | null;
  /** Budget left for evictable weights (null: unlimited). */
  readonly freeBytes: number | null;
}

export interface WorkerInfo {
  readonly name: string;
  readonly version: string;
  readonly platform: string;
  readonly modelControlMode: ModelControlMode | string;
  readonly discipline: Discipline;
  readonly ready: boolean;
  readonly inflight: number;
  readonly devices: readonly DeviceMemory[];
}

export type ModelState = 'UNKNOWN' | 'READY' | 'UNAVAILABLE' | 'LOADING' | 'UNLOADING';

export interface ModelPolicy {
  readonly residency: Residency;
  readonly weight: number;
  /** null: the largest compiled size. */
  readonly maxBatchSize: number | null;
  /** Batching window; null: the scheduler's default. */
  readonly maxQueueDelayUs: number | null;
}

export interface ModelResidency {
  /** The floor: unpinned (evictable), system (pinned in host memory), device (pinned on device). */
  readonly floor: Residency;
  readonly weightBytes: number;
  readonly deviceResident: boolean;
  readonly hostResident: boolean;
  readonly loading: boolean;
  readonly leases: number;
  readonly loads: number;
  readonly evictions: number;
  /** When a dispatch last used the weights, epoch ms; null: not since load. */
  readonly lastUsedAt: number | null;
}

export interface ModelQueue {
  readonly depth: number;
  readonly rows: number;
  readonly inflight: number;
  /** How long the front request has waited, ms (0: empty). */
  readonly oldestWaitMs: number;
  /** Requests dropped for their deadline (expired while queued, or shed by edf). */
  readonly deadlineMisses: number;
}

export interface ModelStats {
  readonly requestsServed: number;
  readonly rowsServed: number;
  readonly paddedRows: number;
  readonly dispatchCount: number;
  readonly failedDispatches: number;
  readonly computeSecondsTotal: number;
  readonly queueWaitSecondsTotal: number;
  /** Learned execution cost per compiled batch size, seconds. */
  readonly costSeconds: Readonly<Record<string, number>>;
}

export interface ModelInfo {
  readonly name: string;
  readonly version: string;
  readonly state: ModelState;
  readonly reason: string;
  readonly batchSizes: readonly number[];
  readonly residency: ModelResidency | null;
  readonly policy: ModelPolicy | null;
  readonly queue: ModelQueue | null;
  readonly stats: ModelStats | null;
}

/** One model's sample in a metrics tick (1 Hz). */
export interface MetricSample {
  readonly at: number;
  readonly requestsPerSecond: number;
  readonly p50Ms: number | null;
  readonly p99Ms: number | null;
  readonly queueDepth: number;
  readonly residentBytes: number;
  /** Counters since start. */
  readonly loads: number;
  readonly evictions: number;
}

/** A delta of the `metrics` topic: every model's sample at one instant. */
export interface MetricsTick {
  readonly at: number;
  readonly models: Readonly<Record<string, MetricSample>>;
}

export interface AuditRecord {
  readonly seq: number;
  readonly at: number;
  readonly actor: string;
  readonly action: string;
  readonly target: string;
  readonly before: unknown;
  readonly after: unknown;
  readonly result: string;
  readonly requestId: string;
  readonly idempotencyKey: string | null;
}

export interface EventRecord {
  readonly seq: number;
  readonly at: number;
  readonly kind: string;
  readonly model: string | null;
  readonly data: Readonly<Record<string, unknown>>;
}

export interface TokenInfo {
  readonly id: string;
  readonly name: string;
  readonly scope: Scope;
  readonly createdAt: number;
  readonly createdBy: string;
  readonly expiresAt: number | null;
  readonly revokedAt: number | null;
  readonly lastUsedAt: number | null;
}

/** POST /setup and POST /tokens: the secret, returned once. */
export interface CreatedToken {
  readonly token: string;
  readonly tokenInfo: TokenInfo;
}

export interface SettingsTls {
  readonly enabled: boolean;
  readonly certFile: string | null;
  readonly subject: string | null;
  /** OpenSSL's notAfter text, e.g. "Nov 26 01:20:00 2026 GMT". */
  readonly validTo: string | null;
  readonly clientCertificates: boolean;
}

/** The operations state store as the engine sees it (GET /settings). */
export interface StoreHealth {
  readonly dialect: 'sqlite' | 'postgres';
  /** The SQLite file, or postgres://host:port/db. */
  readonly location: string;
  readonly reachable: boolean;
  /** One round trip, ms; null when the store did not answer. */
  readonly latencyMs: number | null;
  readonly migrations: { readonly applied: number; readonly known: number; readonly latest: string | null } | null;
  readonly error: string | null;
}

export interface Settings {
  readonly discipline: Discipline;
  readonly modelControlMode: ModelControlMode | string;
  readonly stateStore: 'sqlite' | 'postgres';
  /** The store's health (absent from an older engine, and from a PATCH's answer). */
  readonly store?: StoreHealth;
  /** What the listener the console talks to serves (the gateway's, under a supervisor). */
  readonly tls: SettingsTls;
  readonly feed: { readonly metricsIntervalMs: number; readonly heartbeatMs: number };
  /** The device's budget for evictable weights; null: unlimited (absent from an older engine). */
  readonly weightBudgetBytes?: number | null;
}

export type ModelAction = 'load' | 'unload' | 'reload' | 'drain' | 'pin' | 'unpin';

/** Feed messages on WebSocket /api/v1/stream. */
export interface StreamMessage<T = unknown> {
  readonly topic: string;
  readonly seq: number;
  readonly kind: 'snapshot' | 'delta' | 'resync';
  readonly data: T;
}

/** A keyed topic (models, residency, queues): its snapshot and its deltas. */
export interface KeyedSnapshot<T> {
  readonly items: Readonly<Record<string, T>>;
}
export interface KeyedDelta<T> {
  readonly upsert: Readonly<Record<string, T>>;
  readonly remove: readonly string[];
}
/** A log topic (events, metrics): its snapshot holds the last few entries; each delta is one entry. */
export interface LogSnapshot<T> {
  readonly items: readonly T[];
}

/** What the models topic carries per model (the rest comes on residency and queues). */
export type ModelEntry = Pick<ModelInfo, 'name' | 'version' | 'state' | 'reason' | 'batchSizes' | 'policy'>;

/** GET /models/:name/io: one tensor with its named axes and wire shape. */
export interface TensorView {
  readonly name: string;
  readonly datatype: string;
  /** Manifest order (column-major, batch last), e.g. `cwhn`. */
  readonly letters: string;
  /** Wire (row-major) order, e.g. `nhwc`. */
  readonly wireLetters: string;
  readonly dims: Readonly<Record<string, number>>;
  /** -1 for the batch and variable axes. */
  readonly wireShape: readonly number[];
  readonly wireBatchAxis: number | null;
}

export type ReferenceSource = 'client-reference.json' | 'reference.safetensors' | 'generated';

export interface ModelIo {
  readonly name: string;
  readonly kind: 'model' | 'meta';
  readonly description: string | null;
  readonly inputs: readonly TensorView[];
  readonly outputs: readonly TensorView[];
  readonly executableInputs: readonly TensorView[];
  readonly executableOutputs: readonly TensorView[];
  readonly hooks: boolean;
  readonly metaCalls: readonly string[];
  readonly compiledBatchSizes: readonly number[];
  readonly reference: ReferenceSource;
  readonly provenance: Readonly<Record<string, unknown>>;
  readonly warnings: readonly string[];
}

export interface Histogram {
  /** Upper bounds; counts has one more entry (+Inf). Counts are per bucket, not cumulative. */
  readonly bounds: readonly number[];
  readonly counts: readonly number[];
  readonly sum: number;
  readonly count: number;
}

export interface ModelHistograms {
  readonly latencySeconds: Histogram | null;
  /** Device executions per compiled batch size. */
  readonly batchSizes: Readonly<Record<string, number>>;
  readonly rowsServed: number;
  readonly paddedRows: number;
}

export interface QueueModel {
  readonly name: string;
  readonly weight: number;
  readonly depth: number;
  readonly rows: number;
  readonly inflight: number;
  readonly oldestWaitMs: number;
  readonly deadlineMisses: number;
  readonly requestsServed: number;
  readonly computeSecondsTotal: number;
  readonly recentComputeSeconds: number;
  /** Part of the recent device time used while others waited: what fair compares with weightShare. */
  readonly contendedShare: number;
  readonly weightShare: number;
}

/** GET /queues. */
export interface QueuesInfo {
  readonly at: number;
  readonly discipline: Discipline;
  readonly executing: number;
  readonly models: readonly QueueModel[];
}

/** GET /models/:name/versions: the folder in the repository and the kept previous ones. */
export interface BundleVersion {
  readonly id: string;
  readonly current: boolean;
  readonly at: number;
  readonly files: number;
  readonly bytes: number;
  readonly manifestSha256: string;
  readonly description: string | null;
  readonly compiledBatchSizes: readonly number[];
}

export interface TryTensor {
  readonly name: string;
  readonly datatype: string;
  readonly shape: readonly number[];
  readonly preview: readonly (number | string | boolean)[];
  readonly elements: number;
}

/** POST /models/:name/try. */
export interface TryResult {
  readonly model: string;
  readonly source: ReferenceSource;
  readonly inputs: readonly TryTensor[];
  readonly outputs: readonly TryTensor[];
  readonly latencyMs: number;
  readonly maxAbsDiff: number | null;
  readonly requestJson: string | null;
}
