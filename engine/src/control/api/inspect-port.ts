/**
 * What the console's model detail and queues screens read beyond ModelPort: the manifest's
 * tensors, latency and batch-size histograms, the scheduler's queues, the versions kept in the
 * repository (and rollback to one), and a "try it" inference of the bundle's reference input.
 * worker-inspect-port.ts implements it over the Worker; the routes are in inspect-routes.ts.
 */
import type { Discipline } from '../../config/types.js';

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
  readonly reference: 'client-reference.json' | 'reference.safetensors' | 'generated';
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
  readonly source: ModelIoView['reference'];
  readonly inputs: readonly TryTensor[];
  readonly outputs: readonly TryTensor[];
  readonly latencyMs: number;
  /** Largest |output - reference output| over the reference's outputs; null without one. */
  readonly maxAbsDiff: number | null;
  /** The request as KServe V2 JSON (for the curl snippet), or null when too large to show. */
  readonly requestJson: string | null;
}

export interface InspectPort {
  io(name: string): Promise<ModelIoView>;
  histograms(name: string): ModelHistogramsView;
  queues(): QueuesView;
  versions(name: string): Promise<BundleVersionView[]>;
  /** Puts a kept version back in place of the current one (which is kept in turn), then loads it. */
  rollback(name: string, id: string, signal?: AbortSignal): Promise<BundleVersionView[]>;
  /** Runs the bundle's reference input (or a generated one) through the engine's infer path. */
  tryInfer(name: string, signal?: AbortSignal): Promise<TryResult>;
}
