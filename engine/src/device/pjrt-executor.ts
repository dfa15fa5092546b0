import type { DeviceBuffer } from '@hloserve/native';
import type { ModelVersion, WeightSource } from '../model/model-version.js';
import type { ExecutionRequest, Executor } from '../scheduler/executor.js';
import type { HostTensor } from '../tensor.js';
import type { WeightCache, WeightLease } from '../weights/weight-cache.js';
import type { HostWeights } from '../weights/pjrt-weight-backend.js';

export type PjrtLease = WeightLease<readonly DeviceBuffer[]>;

/**
 * Runs the scheduler's batches on the PJRT runtime. Every batch names the version its requests
 * were admitted to; its weights come from the cache under that version's key and its executable
 * from that version, so a batch always runs one consistent (executable, weights) pair.
 */
export class PjrtExecutor implements Executor<PjrtLease, ModelVersion> {
  /** PJRT cannot stop a launched execution (see execute). */
  readonly cancellable = false;
  /** The addon holds the host inputs until the execution returns, and outputs are new buffers. */
  readonly releasesInputs = true;
  readonly #cache: WeightCache<HostWeights, readonly DeviceBuffer[], WeightSource>;
  readonly #inline: boolean;

  /**
   * `inline`: run the batches the scheduler marks mayRunInline on the event loop's thread. Only
   * for the CPU plugin, whose executions finish on the host; a GPU's may wait on the device for
   * as long as it likes, and the event loop must never wait with it.
   */
  constructor(
    cache: WeightCache<HostWeights, readonly DeviceBuffer[], WeightSource>,
    options: { inline?: boolean } = {},
  ) {
    this.#cache = cache;
    this.#inline = options.inline ?? false;
  }

  prepare(_model: string, version: ModelVersion): Promise<PjrtLease> {
    return this.#cache.acquire(version.weights.key);
  }

  isReady(_model: string, version: ModelVersion): boolean {
    return this.#cache.isResident(version.weights.key);
  }

  async execute(req: ExecutionRequest<PjrtLease, ModelVersion>): Promise<readonly HostTensor[]> {
    // The version is held while the device runs it: a replaced version's executables are freed
    // only after its last execution returns, even one whose callers a timeout already answered.
    const v = req.version;
    v.hold();
    try {
      // The dispatch timeout's signal is not passed on: PJRT cannot stop a launched execution, and
      // settling early would end the lease while the device still reads the weights, letting the
      // cache count their bytes free too soon. The scheduler has answered the callers already.
      if (this.#inline && req.mayRunInline === true) {
        // Null while a warmup holds the synchronous client (cpu_asynchronous: false): pooled then.
        const out = v.compiled.runInline(req.batchSize, req.inputs, req.lease.weights);
        if (out !== null) return out;
      }
      return await v.compiled.run(req.batchSize, req.inputs, req.lease.weights);
    } finally {
      v.release();
    }
  }
}
