/**
 * What the scheduler needs to know about a model, and the derived facts it plans with. The lead
 * builds a ModelSchedulingInfo from the manifest (batch axes in WIRE order, i.e. the manifest
 * letters reversed) and the per-model config.
 */
import { ServeError, invalidArgument } from '@hloserve/common/errors';
import type { BatchAxes } from './coalesce.js';
import { acceptsAnyBatch, normalizeBatchSizes } from './plan-batch.js';

export interface ModelSchedulingInfo {
  readonly name: string;
  /** Compiled batch sizes (model.bN.mlir); [] or a 0 entry = one module that takes any batch. */
  readonly compiledBatchSizes: readonly number[];
  /** Most rows one dispatch may carry (max_batch_size); null/undefined = the largest compiled size. */
  readonly maxBatchSize?: number | null;
  /** Fair-share weight (> 0); default 1. */
  readonly weight?: number;
  /** Batch axis of each executable input, wire indexing; null for an unbatched input. */
  readonly inputBatchAxes: BatchAxes;
  /** Batch axis of each executable output, wire indexing; null for an unbatched output. */
  readonly outputBatchAxes: BatchAxes;
  /** Batching window (max_queue_delay_us); null/undefined = the scheduler's default; 0 = none. */
  readonly maxQueueDelayUs?: number | null;
  /** Queue capacity (max_queue_depth); null/undefined = the scheduler's default. */
  readonly maxQueueDepth?: number | null;
}

/** Scheduler-wide values a model falls back to. */
export interface ModelDefaults {
  readonly maxQueueDepth: number;
  readonly maxQueueDelayUs: number;
}

/** The policy knobs that may change while a model is serving. */
export type ModelPolicyPatch = Partial<
  Pick<ModelSchedulingInfo, 'weight' | 'maxBatchSize' | 'maxQueueDelayUs' | 'maxQueueDepth'>
>;

export interface ResolvedModelInfo {
  readonly name: string;
  readonly sizes: readonly number[];
  readonly anyBatch: boolean;
  readonly cap: number | null;
  readonly weight: number;
  readonly inputBatchAxes: BatchAxes;
  readonly outputBatchAxes: BatchAxes;
  readonly windowMs: number;
  readonly maxQueueDepth: number;
  /** Padding rows can be sliced off: every output and at least one input has a batch axis. */
  readonly canPad: boolean;
  /** Several requests may share an execution: canPad and every input is batched. */
  readonly coalescable: boolean;
  /** Most rows one request may carry; larger requests are refused at submit (never split). */
  readonly maxRows: number;
}

function configError(name: string, what: string): ServeError {
  return new ServeError('HLO_ERR_CONFIG_INVALID', `model '${name}': ${what}`);
}

function positiveIntOrNull(name: string, field: string, v: number | null | undefined): number | null {
  if (v === undefined || v === null) return null;
  if (!Number.isSafeInteger(v) || v < 1) throw configError(name, `${field} must be a positive integer, got ${v}`);
  return v;
}

export function resolveModelInfo(info: ModelSchedulingInfo, defaults: ModelDefaults): ResolvedModelInfo {
  const { name } = info;
  for (const s of info.compiledBatchSizes) {
    if (!Number.isSafeInteger(s) || s < 0)
      throw configError(name, `compiled batch size ${s} is not a non-negative integer`);
  }
  const sizes = normalizeBatchSizes(info.compiledBatchSizes);
  const anyBatch = acceptsAnyBatch(sizes);
  const cap = positiveIntOrNull(name, 'max_batch_size', info.maxBatchSize);
  const weight = info.weight ?? 1;
  if (!(weight > 0) || !Number.isFinite(weight)) throw configError(name, `weight must be > 0, got ${weight}`);
  const delayUs = info.maxQueueDelayUs ?? defaults.maxQueueDelayUs;
  if (!(delayUs >= 0) || !Number.isFinite(delayUs)) throw configError(name, `max_queue_delay_us must be >= 0`);
  const maxQueueDepth = positiveIntOrNull(name, 'max_queue_depth', info.maxQueueDepth) ?? defaults.maxQueueDepth;
  for (const a of [...info.inputBatchAxes, ...info.outputBatchAxes]) {
    if (a !== null && (!Number.isSafeInteger(a) || a < 0))
      throw configError(name, `batch axis ${a} is not a wire axis index`);
  }
  const anyInputBatched = info.inputBatchAxes.some((a) => a !== null);
  const canPad = anyInputBatched && info.outputBatchAxes.every((a) => a !== null);
  const coalescable = canPad && info.inputBatchAxes.every((a) => a !== null);
  const maxRows = anyBatch ? Infinity : sizes[sizes.length - 1]!;
  return {
    name,
    sizes,
    anyBatch,
    cap,
    weight,
    inputBatchAxes: [...info.inputBatchAxes],
    outputBatchAxes: [...info.outputBatchAxes],
    windowMs: delayUs / 1000,
    maxQueueDepth,
    canPad,
    coalescable,
    maxRows,
  };
}

/**
 * Null when a request of `rows` rows can be served, else why not. Checked at submit so that an
 * impossible request is refused with INVALID_ARGUMENT instead of failing after it waited (the
 * reference failed it inside the run).
 */
export function rowsProblem(info: ResolvedModelInfo, rows: number): ServeError | null {
  if (!Number.isSafeInteger(rows) || rows < 1)
    return invalidArgument(`model '${info.name}': a request needs at least one row`);
  if (info.anyBatch) return null;
  if (info.canPad) {
    if (rows > info.maxRows) {
      return invalidArgument(
        `model '${info.name}': request has ${rows} rows but the largest compiled batch size is ${info.maxRows}; ` +
          'requests are never split, send at most that many rows',
      );
    }
    return null;
  }
  if (!info.sizes.includes(rows)) {
    return invalidArgument(
      `model '${info.name}': request has ${rows} rows; this model cannot be padded (an output has no batch axis), ` +
        `so the batch must be one of its compiled sizes [${info.sizes.join(', ')}]`,
    );
  }
  return null;
}
