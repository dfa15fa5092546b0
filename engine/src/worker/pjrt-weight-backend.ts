import type { DeviceBuffer, Runtime } from '@hloserve/native';
import { readSafetensors } from '../bundle/safetensors.js';
import { ServeError } from '../errors.js';
import { uploadTensors, type WeightTensor } from '../model/compiled-model.js';
import type { WeightBackend } from '../weights/weight-backend.js';

export interface WeightSource {
  /** The bundle's weights.safetensors, or null for a model without weights. */
  readonly path: string | null;
  readonly argumentOrder: readonly string[];
}

/**
 * The weight cache's device side on PJRT: host copies are the safetensors file read into memory
 * (views, in argument order), device copies are PJRT buffers in device memory.
 */
export class PjrtWeightBackend implements WeightBackend<readonly WeightTensor[], readonly DeviceBuffer[]> {
  readonly #runtime: Runtime;
  readonly #sources: Map<string, WeightSource> = new Map();

  constructor(runtime: Runtime) {
    this.#runtime = runtime;
  }

  setSource(model: string, source: WeightSource): void {
    this.#sources.set(model, source);
  }

  removeSource(model: string): void {
    this.#sources.delete(model);
  }

  async readHost(model: string): Promise<readonly WeightTensor[]> {
    const src = this.#sources.get(model);
    if (!src) throw new ServeError('HLO_ERR_MODEL_NOT_FOUND', `no weights registered for model '${model}'`);
    if (src.path === null) return [];
    const file = await readSafetensors(src.path);
    return src.argumentOrder.map((name) => {
      const t = file.tensor(name);
      if (!t)
        throw new ServeError('HLO_ERR_BUNDLE_INVALID', `${src.path}: tensor '${name}' of argument_order is missing`);
      return { name, dtype: t.dtype, shape: t.shape, data: t.data };
    });
  }

  async upload(_model: string, host: readonly WeightTensor[]): Promise<readonly DeviceBuffer[]> {
    return uploadTensors(this.#runtime, host);
  }

  free(_model: string, device: readonly DeviceBuffer[]): void {
    for (const b of device) b.dispose();
  }
}
