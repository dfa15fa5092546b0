/**
 * The control API's shapes as the console reads them, in one file so they can be aligned with the
 * engine's JSON schemas (GET /api/v1/openapi.json) in one place. Every REST answer is `{data, seq}`.
 */

export type Scope = 'viewer' | 'operator' | 'admin';

export interface Envelope<T> {
  readonly data: T;
  readonly seq: number;
}

export interface Session {
  readonly scope: Scope;
  readonly tokenName: string;
  /** static: the repository decides; dynamic: it is watched; explicit: load/unload only by request. */
  readonly controlMode: 'static' | 'dynamic' | 'explicit';
}

export type ModelState = 'registered' | 'validating' | 'compiling' | 'loading' | 'ready' | 'unloaded' | 'failed';
export type Residency = 'unpinned' | 'system' | 'device';

export interface ModelSummary {
  readonly name: string;
  readonly version: string;
  readonly state: ModelState;
  /** Where the weights are held now (the outcome, never the request). */
  readonly resident: 'device' | 'host' | 'none';
  readonly residentBytes: number;
  readonly pin: Residency;
  readonly weight: number;
  readonly batchSizes: readonly number[];
  readonly queueDepth: number;
  readonly inFlight: number;
  readonly requestsPerSecond: number;
  readonly p99Ms: number | null;
  readonly loads: number;
  readonly evictions: number;
  /** Epoch milliseconds, null when never used. */
  readonly lastUsedMs: number | null;
}

export interface TensorSpec {
  readonly name: string;
  readonly dtype: string;
  /** Named axes in the manifest's column-major, batch-last order, e.g. "whcn". */
  readonly shape: string;
  readonly dims: readonly number[];
}

export interface CompiledSize {
  readonly batchSize: number;
  readonly bytes: number;
  /** Learned device cost of one call at this size, null until measured. */
  readonly costMs: number | null;
}

export interface Policy {
  readonly pin: Residency;
  readonly weight: number;
  readonly priority: number;
  readonly maxQueue: number;
  readonly ttlSeconds: number | null;
}

export interface ResidencyEvent {
  readonly timeMs: number;
  readonly kind: 'load' | 'evict' | 'pin' | 'unpin' | 'reload';
  readonly reason: string;
  readonly durationMs: number | null;
}

export interface ModelDetail extends ModelSummary {
  readonly inputs: readonly TensorSpec[];
  readonly outputs: readonly TensorSpec[];
  readonly compiled: readonly CompiledSize[];
  readonly policy: Policy;
  readonly versions: readonly { readonly version: string; readonly isDefault: boolean; readonly createdMs: number }[];
  readonly residencyLog: readonly ResidencyEvent[];
  readonly hooks: readonly string[];
}

export interface DeviceModelBlock {
  readonly model: string;
  readonly bytes: number;
  readonly pinned: boolean;
  readonly lastUsedMs: number | null;
}

export interface WorkerInfo {
  readonly name: string;
  readonly device: string;
  readonly plugin: string;
  readonly memory: {
    readonly totalBytes: number;
    readonly budgetBytes: number;
    readonly arenaBytes: number;
    readonly freeBytes: number;
    readonly models: readonly DeviceModelBlock[];
  };
}

/** One metrics tick (the server aggregates to at most 1 Hz). */
export interface MetricsTick {
  readonly timeMs: number;
  readonly requestsPerSecond: number;
  readonly p50Ms: number | null;
  readonly p99Ms: number | null;
  readonly errorsPerSecond: number;
  readonly loadsPerMinute: number;
  readonly evictionsPerMinute: number;
}

export interface AuditEntry {
  readonly id: string;
  readonly timeMs: number;
  readonly actor: string;
  readonly action: string;
  readonly target: string;
  readonly before: unknown;
  readonly after: unknown;
  readonly result: 'ok' | 'refused' | 'failed';
  readonly requestId: string;
}

export interface EngineEvent {
  readonly id: string;
  readonly timeMs: number;
  readonly kind: string;
  readonly model: string | null;
  readonly message: string;
}

export interface TokenInfo {
  readonly id: string;
  readonly name: string;
  readonly scope: Scope;
  readonly createdMs: number;
  readonly lastUsedMs: number | null;
}

export interface CreatedToken extends TokenInfo {
  /** The secret, returned once. */
  readonly token: string;
}

export interface Settings {
  readonly controlMode: Session['controlMode'];
  readonly tls: boolean;
  readonly persistence: { readonly driver: 'sqlite' | 'postgres'; readonly location: string };
  readonly version: string;
  /** Where clients reach the inference endpoints, for the "try it" snippets. */
  readonly endpoints?: { readonly http: string; readonly grpc: string };
}

export type ModelAction = 'load' | 'unload' | 'reload' | 'pin' | 'unpin';

/** Messages on the WebSocket /api/v1/stream. */
export interface StreamMessage<T = unknown> {
  readonly topic: string;
  readonly seq: number;
  readonly kind: 'snapshot' | 'delta' | 'tick' | 'resync';
  readonly data: T;
}

/** Delta shapes per topic kind. */
export interface ListDelta<T> {
  readonly upsert?: readonly T[];
  readonly remove?: readonly string[];
}
export interface AppendDelta<T> {
  readonly append: readonly T[];
}
