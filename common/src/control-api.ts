/**
 * The worker's control API, as JSON: what its routes answer and the console reads. The engine
 * builds these values (engine/src/control/api) and the console types its queries with them; both
 * import them from here, so a field changes in one place.
 */

export type ModelControlMode = 'static' | 'dynamic' | 'explicit';
export type Discipline = 'fair' | 'fifo' | 'edf';
/** A model's residency floor: unpinned (evictable), system (pinned in host memory), device (pinned on device). */
export type Residency = 'unpinned' | 'system' | 'device';
/** Where a try-it input comes from. */
export type ReferenceSource = 'client-reference.json' | 'reference.safetensors' | 'generated';

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

/** One tensor as the manifest names it and as the wire carries it. */
export interface TensorView {
  readonly name: string;
  /** KServe datatype (FP32, INT64, BYTES, ...). */
  readonly datatype: string;
  /** Axis letters in manifest order (column-major, batch last), e.g. `cwhn`. */
  readonly letters: string;
  /** The same letters in wire (row-major) order, e.g. `nhwc`. */
  readonly wireLetters: string;
  /** Extent per letter: > 0 fixed, -1 variable (the batch letter is absent). */
  readonly dims: Readonly<Record<string, number>>;
  /** The wire shape with -1 for the batch and variable axes. */
  readonly wireShape: readonly number[];
  /** Index of the batch axis in the wire shape, or null. */
  readonly wireBatchAxis: number | null;
}

export interface ModelIoView {
  readonly name: string;
  readonly kind: 'model' | 'meta';
  readonly description: string | null;
  /** What clients send and receive (the hooks' tensors where the bundle has hooks). */
  readonly inputs: readonly TensorView[];
  readonly outputs: readonly TensorView[];
  /** The compiled module's tensors (equal to inputs/outputs without hooks; empty for meta). */
  readonly executableInputs: readonly TensorView[];
  readonly executableOutputs: readonly TensorView[];
  readonly hooks: boolean;
  readonly metaCalls: readonly string[];
  readonly compiledBatchSizes: readonly number[];
  /** Where a try-it input comes from. */
  readonly reference: ReferenceSource;
  readonly provenance: Readonly<Record<string, unknown>>;
  readonly warnings: readonly string[];
}

export interface HistogramView {
  /** Upper bounds of the buckets (the last bucket, +Inf, has none). */
  readonly bounds: readonly number[];
  /** Count per bucket (not cumulative); one more than bounds. */
  readonly counts: readonly number[];
  readonly sum: number;
  readonly count: number;
}

export interface ModelHistogramsView {
  /** End-to-end request latency in the worker, seconds; null before the first request. */
  readonly latencySeconds: HistogramView | null;
  /** Device executions per compiled batch size. */
  readonly batchSizes: Readonly<Record<string, number>>;
  /** Rows the executions carried (what batching achieved) and the padding they needed. */
  readonly rowsServed: number;
  readonly paddedRows: number;
}

export interface QueueModelView {
  readonly name: string;
  readonly weight: number;
  readonly depth: number;
  readonly rows: number;
  readonly inflight: number;
  readonly oldestWaitMs: number;
  readonly deadlineMisses: number;
  readonly requestsServed: number;
  readonly computeSecondsTotal: number;
  /**
   * The fair discipline's memory: decayed device seconds this model used while another model was
   * waiting (30 s half-life by default). Device time used alone took nothing from anyone.
   */
  readonly recentComputeSeconds: number;
  /** This model's part of every model's recentComputeSeconds: what fair compares with weightShare. */
  readonly contendedShare: number;
  /** This model's weight over the weights of every scheduled model. */
  readonly weightShare: number;
}

export interface QueuesView {
  readonly at: number;
  readonly discipline: Discipline;
  /** Executions on the device right now. */
  readonly executing: number;
  readonly models: readonly QueueModelView[];
}

export interface BundleVersionView {
  /** 'current', or the install time (ms) of a kept previous version. */
  readonly id: string;
  readonly current: boolean;
  /** When it was installed (current: the folder's mtime; previous: when it was replaced). */
  readonly at: number;
  readonly files: number;
  readonly bytes: number;
  /** sha256 of manifest.yaml, first 12 hex digits: equal digits, equal manifests. */
  readonly manifestSha256: string;
  readonly description: string | null;
  readonly compiledBatchSizes: readonly number[];
}

export interface TryTensor {
  readonly name: string;
  readonly datatype: string;
  readonly shape: readonly number[];
  /** The first elements as numbers (or strings for BYTES), at most 64. */
  readonly preview: readonly (number | string | boolean)[];
  readonly elements: number;
}

export interface TryResult {
  readonly model: string;
  readonly source: ReferenceSource;
  readonly inputs: readonly TryTensor[];
  readonly outputs: readonly TryTensor[];
  readonly latencyMs: number;
  /** Largest |output - reference output| over the reference's outputs; null without one. */
  readonly maxAbsDiff: number | null;
  /** The request as KServe V2 JSON (for the curl snippet), or null when too large to show. */
  readonly requestJson: string | null;
}
