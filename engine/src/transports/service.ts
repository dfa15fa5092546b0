import type { CancelSignal } from '@hloserve/common/cancellation';
import type { ModelMetadata, ServerMetadata, WireInferRequest, WireInferResponse } from '@hloserve/common/wire';
import type { SharedMemoryRegistry } from './shared-memory.js';

export type { ModelMetadata, ServerMetadata, TensorMetadata } from '@hloserve/common/wire';

/** Triton's ModelConfig in its JSON form (field names as tritonclient's get_model_config prints them). */
export interface ModelConfigJson {
  readonly name: string;
  readonly platform: string;
  readonly backend: string;
  readonly max_batch_size: number;
  readonly input: readonly { name: string; data_type: string; dims: readonly number[] }[];
  readonly output: readonly { name: string; data_type: string; dims: readonly number[] }[];
  readonly dynamic_batching?: { preferred_batch_size: readonly number[]; max_queue_delay_microseconds: number };
  readonly parameters?: Readonly<Record<string, { string_value: string }>>;
}

export interface Duration {
  readonly count: number;
  readonly ns: number;
}

/** Triton's ModelStatistics (durations are cumulative). */
export interface ModelStatisticsJson {
  readonly name: string;
  readonly version: string;
  readonly last_inference: number;
  readonly inference_count: number;
  readonly execution_count: number;
  readonly inference_stats: {
    readonly success: Duration;
    readonly fail: Duration;
    readonly queue: Duration;
    readonly compute_input: Duration;
    readonly compute_infer: Duration;
    readonly compute_output: Duration;
  };
  readonly batch_stats: readonly {
    readonly batch_size: number;
    readonly compute_input: Duration;
    readonly compute_infer: Duration;
    readonly compute_output: Duration;
  }[];
  readonly memory_usage: readonly { type: string; id: number; byte_size: number }[];
}

export type ModelState = 'UNKNOWN' | 'READY' | 'UNAVAILABLE' | 'LOADING' | 'UNLOADING';

export interface ModelIndexEntry {
  readonly name: string;
  readonly version: string;
  readonly state: ModelState;
  readonly reason: string;
}

export interface InferContext {
  /** Absolute deadline in epoch milliseconds, or null. */
  readonly deadline: number | null;
  /**
   * Cancels the request: an AbortSignal, or the cheaper Cancellation the transports use. Optional:
   * an in-process caller that never cancels passes none.
   */
  readonly signal?: CancelSignal;
  /**
   * A meta model's call to one of its sub-models: it is part of a request already admitted, so
   * the in-flight cap does not apply to it again (a pipeline must not be refused halfway).
   */
  readonly nested?: boolean;
}

/**
 * Everything the KServe front ends (gRPC and HTTP) ask of a worker, free of wire formats.
 * Methods throw ServeError; the transports map it to a status in one place each.
 */
export interface InferenceService {
  serverLive(): boolean;
  serverReady(): boolean;
  serverMetadata(): ServerMetadata;
  modelReady(name: string, version: string): boolean;
  modelMetadata(name: string, version: string): ModelMetadata;
  modelConfig(name: string, version: string): ModelConfigJson;
  modelStatistics(name: string, version: string): ModelStatisticsJson[];
  repositoryIndex(readyOnly: boolean): ModelIndexEntry[];
  loadModel(name: string, signal?: AbortSignal): Promise<void>;
  unloadModel(name: string): Promise<void>;
  infer(request: WireInferRequest, ctx: InferContext): Promise<WireInferResponse>;
  readonly sharedMemory: SharedMemoryRegistry | null;
  /** Limits the transports enforce. */
  readonly limits: { readonly maxRecvBytes: number; readonly maxSendBytes: number };
}
