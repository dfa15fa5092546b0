/**
 * The control API's shapes. Those of the models, devices, queues and model detail are the
 * engine's own (common/src/control-api.ts); the rest are declared here (the OpenAPI document is
 * GET /api/v1/openapi.json). REST lists answer `{data, seq}`; seq is the live feed's position for
 * that resource.
 */
import type { Discipline, ModelControlMode, ModelView } from '@hloserve/common/control-api';

export type {
  BundleVersionView,
  DeviceMemoryView,
  Discipline,
  HistogramView,
  ModelControlMode,
  ModelHistogramsView,
  ModelIoView,
  ModelLifecycleState,
  ModelPolicyView,
  ModelQueueView,
  ModelResidencyView,
  ModelStatsView,
  ModelView,
  QueueModelView,
  QueuesView,
  ReferenceSource,
  Residency,
  TensorView,
  TryResult,
  TryTensor,
  WorkerView,
} from '@hloserve/common/control-api';

export type Scope = 'viewer' | 'operator' | 'admin';
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

/** One model's sample in a metrics tick (1 Hz); the tick says when. */
export interface MetricValues {
  readonly requestsPerSecond: number;
  readonly p50Ms: number | null;
  readonly p99Ms: number | null;
  readonly queueDepth: number;
  readonly residentBytes: number;
  /** Counters since start. */
  readonly loads: number;
  readonly evictions: number;
}

/** One model's sample as its history answers it. */
export interface MetricSample extends MetricValues {
  readonly at: number;
}

/** The fleet's figures at one tick: sums over the models, and the slowest model's percentiles. */
export interface MetricTotals {
  readonly requestsPerSecond: number;
  readonly p50Ms: number | null;
  readonly p99Ms: number | null;
  /** Counters since each model's start. */
  readonly loads: number;
  readonly evictions: number;
}

/** A tick's stamp: when its samples were read, and the totals over every model then. */
export interface MetricStamp {
  readonly at: number;
  readonly totals: MetricTotals;
}

/**
 * The `metrics` topic is keyed by model and stamped per tick: the snapshot holds every model's
 * latest sample and the last five minutes of stamps, each delta (one per tick, even an empty one)
 * the samples that changed, with the tick's stamp.
 */
export interface MetricsSnapshot extends KeyedSnapshot<MetricValues> {
  readonly at?: number;
  readonly recent?: readonly MetricStamp[];
}
export interface MetricsDelta extends KeyedDelta<MetricValues>, MetricStamp {}

export type TickTotals = MetricTotals & { readonly at: number };

/** What the console holds of the metrics topic: each model's latest sample, and the totals per tick. */
export interface MetricsState {
  readonly latest: ReadonlyMap<string, MetricValues>;
  /** Oldest first, at most five minutes. */
  readonly totals: readonly TickTotals[];
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

export type ModelAction = 'load' | 'unload' | 'reload' | 'drain' | 'resume' | 'pin' | 'unpin';

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
/**
 * A log topic (events): its snapshot holds the last few entries, and each delta the entries the
 * engine stored together, both oldest first.
 */
export interface LogSnapshot<T> {
  readonly items: readonly T[];
}

/** What the models topic carries per model (the rest comes on residency and queues). */
export type ModelEntry = Pick<ModelView, 'name' | 'version' | 'state' | 'reason' | 'batchSizes' | 'policy' | 'drain'>;
