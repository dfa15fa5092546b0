/**
 * The device seam. The scheduler decides what runs and when; an Executor (the lead wires it to
 * the PJRT runtime and the WeightCache) runs it. Everything device-specific stays behind this.
 */
import type { HostTensor } from '../tensor.js';

/** Held from prepare() until the execution that used it has settled; WeightLease satisfies it. */
export interface ExecutionLease {
  release(): void;
}

export interface ExecutionRequest<L extends ExecutionLease = ExecutionLease, V = unknown> {
  readonly model: string;
  /** The version every request of the batch was queued with (see Scheduler.submit). */
  readonly version: V;
  /** Compiled batch size to run (selects model.bN.mlir); 0 = the model's any-batch module. */
  readonly batchSize: number;
  /** Real rows in the batch; the rest up to batchSize is zero padding. */
  readonly rows: number;
  /** Requests coalesced into this execution. */
  readonly requests: number;
  /** Executable inputs in manifest order, already at batchSize (the weights come from the lease). */
  readonly inputs: readonly HostTensor[];
  readonly lease: L;
  /**
   * Aborted when the dispatch timeout fires. The scheduler has already answered the callers by
   * then; an executor able to cancel device work may stop early, one that cannot may ignore it.
   */
  readonly signal: AbortSignal;
  /**
   * One request, nothing else executing, queued, being prepared or in the caller's hands, and this
   * batch size's measured cost at most INLINE_MAX_SECONDS (scheduler.ts): an executor that can may run it on the calling
   * thread instead of handing it to another. Such a run cannot be timed out (nothing else runs
   * meanwhile to notice), so the scheduler arms no dispatch timer for it.
   */
  readonly mayRunInline?: boolean;
}

export interface Executor<L extends ExecutionLease = ExecutionLease, V = unknown> {
  /**
   * False when device work cannot be stopped once launched (PJRT): the scheduler then creates no
   * AbortController per dispatch (about 5 us each on Node 20) and passes a signal that never
   * aborts. Default true.
   */
  readonly cancellable?: boolean;
  /**
   * True when the executor has finished with `inputs` once execute() settles, and its outputs never
   * share their bytes (PJRT reads the host inputs before the execution completes and returns new
   * output buffers). The scheduler then gathers batches into buffers it reuses across dispatches.
   * An executor that keeps inputs past settling, or that settles early on its signal, must leave it
   * unset. Default false.
   */
  readonly releasesInputs?: boolean;
  /**
   * Makes the model runnable, typically WeightCache.acquire. Called for the next dispatch while
   * the current one may still be executing, so a cold upload overlaps compute.
   */
  prepare(model: string, version: V): Promise<L>;
  /**
   * True when prepare() would answer without device work (the model's weights are resident).
   * Optional: without it the scheduler treats every model as ready and never holds one back.
   */
  isReady?(model: string, version: V): boolean;
  /** Runs one batch. Outputs in manifest order, each with the batch axis at batchSize extent. */
  execute(request: ExecutionRequest<L, V>): Promise<readonly HostTensor[]>;
}
