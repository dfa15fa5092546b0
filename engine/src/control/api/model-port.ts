/**
 * What the control API needs from the engine, and nothing more. The routes, the live feed and the
 * reconciler see only this interface; worker-model-port.ts implements it over today's Worker, and
 * the lifecycle's ControlService facade replaces that adapter without touching the routes.
 */
import type {
  Discipline,
  ModelPolicyPatch,
  ModelPolicyView,
  ModelView,
  WorkerView,
} from '@hloserve/common/control-api';
import type { LatencyCounts } from '../../observability/latency-histogram.js';
import type { InspectPort } from './inspect-port.js';

// The shapes are the API's (common/src/control-api.ts, shared with the console); the engine's
// modules keep importing them from here.
export type {
  DeviceMemoryView,
  ModelDrainView,
  ModelLifecycleState,
  ModelPolicyPatch,
  ModelPolicyView,
  ModelQueueView,
  ModelResidencyView,
  ModelStatsView,
  ModelView,
  WorkerView,
} from '@hloserve/common/control-api';

/** Something that happened in the engine; the control layer numbers, stores and streams it. */
export interface EngineEvent {
  readonly at: number;
  readonly kind: string;
  readonly model: string | null;
  readonly data: Readonly<Record<string, unknown>>;
}

/** drain: admit nothing new, let what was admitted finish; resume (or load, reload) lifts it. */
export type ModelAction = 'load' | 'unload' | 'reload' | 'drain' | 'resume';

/** What the metric history samples of a model each second. */
export interface ModelLoad {
  readonly name: string;
  /** Requests answered since the model's slot was made. */
  readonly requestsServed: number;
  readonly queueDepth: number;
  /** The weights' bytes while they are on the device, else 0. */
  readonly residentBytes: number;
  readonly loads: number;
  readonly evictions: number;
}

export interface ModelPort {
  worker(): WorkerView;
  models(): ModelView[];
  /** Every model's load, as models() would tell it, without building the rest of each view. */
  loads(): ModelLoad[];
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
