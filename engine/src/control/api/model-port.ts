/**
 * What the control API needs from the engine, and nothing more. The routes, the live feed and the
 * reconciler see only this interface; worker-model-port.ts implements it over today's Worker, and
 * the lifecycle's ControlService facade replaces that adapter without touching the routes.
 */
import type { Discipline, Residency } from '../../config/types.js';
import type { LatencyCounts } from '../../worker/latency-histogram.js';
import type { InspectPort } from './inspect-port.js';

export type ModelLifecycleState = 'UNKNOWN' | 'READY' | 'UNAVAILABLE' | 'LOADING' | 'UNLOADING';

export interface ModelPolicyView {
  readonly residency: Residency;
  readonly weight: number;
  /** null: the largest compiled size. */
  readonly maxBatchSize: number | null;
  /** Batching window; null: the scheduler's default. */
  readonly maxQueueDelayUs: number | null;
}

export type ModelPolicyPatch = Partial<ModelPolicyView>;

export interface ModelResidencyView {
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

export interface ModelQueueView {
  readonly depth: number;
  readonly rows: number;
  readonly inflight: number;
  /** How long the front request has waited, ms (0: empty queue). */
  readonly oldestWaitMs: number;
  /** Requests dropped for their deadline: expired while queued, or shed by edf. */
  readonly deadlineMisses: number;
}

export interface ModelStatsView {
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

export interface ModelView {
  readonly name: string;
  readonly version: string;
  readonly state: ModelLifecycleState;
  readonly reason: string;
  readonly batchSizes: readonly number[];
  readonly residency: ModelResidencyView | null;
  readonly policy: ModelPolicyView | null;
  readonly queue: ModelQueueView | null;
  readonly stats: ModelStatsView | null;
  /** Set while the model is drained; null when it admits requests. */
  readonly drain: ModelDrainView | null;
}

export interface ModelDrainView {
  /** When the drain began, ms since the epoch. */
  readonly since: number;
  /** Requests admitted before the drain and not yet answered. */
  readonly pending: number;
  /** Every request admitted before the drain has been answered. */
  readonly idle: boolean;
}

export interface DeviceMemoryView {
  readonly ordinal: number;
  readonly platform: string;
  /** Device memory the runtime reports (null where it reports none, e.g. the CPU plugin). */
  readonly totalBytes: number | null;
  /** Weight-cache budget for evictable weights (null: unlimited). */
  readonly budgetBytes: number | null;
  readonly residentBytes: number;
  readonly pinnedBytes: number;
  /** Bytes the weight arena has mapped (null without an arena). */
  readonly arenaBytes: number | null;
  /** Budget left for evictable weights (null: unlimited). */
  readonly freeBytes: number | null;
}

export interface WorkerView {
  readonly name: string;
  readonly version: string;
  readonly platform: string;
  readonly modelControlMode: string;
  readonly discipline: Discipline;
  readonly ready: boolean;
  readonly inflight: number;
  readonly devices: readonly DeviceMemoryView[];
}

/** Something that happened in the engine; the control layer numbers, stores and streams it. */
export interface EngineEvent {
  readonly at: number;
  readonly kind: string;
  readonly model: string | null;
  readonly data: Readonly<Record<string, unknown>>;
}

/** drain: admit nothing new, let what was admitted finish; resume (or load, reload) lifts it. */
export type ModelAction = 'load' | 'unload' | 'reload' | 'drain' | 'resume';

export interface ModelPort {
  worker(): WorkerView;
  models(): ModelView[];
  /** undefined: no such model known to the engine. */
  model(name: string): ModelView | undefined;
  /** The model's cumulative request latency counts (LATENCY_BUCKETS log buckets); undefined: unknown. */
  latency(name: string): LatencyCounts | undefined;
  /** Resolves when the action is done; failures are ServeErrors from the catalogue. */
  act(name: string, action: ModelAction, signal?: AbortSignal): Promise<void>;
  /** Applies a live policy change and resolves once it holds (a residency floor may upload). */
  setPolicy(name: string, patch: ModelPolicyPatch): Promise<ModelPolicyView>;
  setDiscipline(discipline: Discipline): void;
  /** Changes the weight-cache budget at once (idle evictable models over it are evicted). */
  setWeightBudget(bytes: number): void;
  subscribe(listener: (event: EngineEvent) => void): () => void;
  /** Model IO, histograms, queues, versions, try-it inference (inspect-routes.ts); absent: 501. */
  readonly inspect?: InspectPort;
}
