import type { DeviceBuffer } from '@hloserve/native';
import { ServeError } from '@hloserve/common/errors';
import type { CompiledModel } from '../model/compiled-model.js';
import type { ExecutionRequest, Executor } from '../scheduler/executor.js';
import type { HostTensor } from '../tensor.js';
import type { WeightCache, WeightLease } from '../weights/weight-cache.js';
import type { HostWeights } from './pjrt-weight-backend.js';

export type PjrtLease = WeightLease<readonly DeviceBuffer[]>;

/** Runs the scheduler's batches on the PJRT runtime, with weights from the cache. */
export class PjrtExecutor implements Executor<PjrtLease> {
  /** PJRT cannot stop a launched execution (see execute). */
  readonly cancellable = false;
  /** The addon holds the host inputs until the execution returns, and outputs are new buffers. */
  readonly releasesInputs = true;
  readonly #cache: WeightCache<HostWeights, readonly DeviceBuffer[]>;
  readonly #models: (name: string) => CompiledModel | undefined;

  constructor(
    cache: WeightCache<HostWeights, readonly DeviceBuffer[]>,
    models: (name: string) => CompiledModel | undefined,
  ) {
    this.#cache = cache;
    this.#models = models;
  }

  prepare(model: string): Promise<PjrtLease> {
    return this.#cache.acquire(model);
  }

  isReady(model: string): boolean {
    return this.#cache.isResident(model);
  }

  async execute(req: ExecutionRequest<PjrtLease>): Promise<readonly HostTensor[]> {
    const m = this.#models(req.model);
    if (!m) throw new ServeError('HLO_ERR_MODEL_NOT_FOUND', `model '${req.model}' was unloaded`);
    // The dispatch timeout's signal is not passed on: PJRT cannot stop a launched execution, and
    // settling early would end the lease while the device still reads the weights, letting the
    // cache count their bytes free too soon. The scheduler has answered the callers already.
    return m.run(req.batchSize, req.inputs, req.lease.weights);
  }
}
