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
 * Where host copies of weights live: the runtime's pinned host memory space (a cold load is then
 * a device-side copy, a DMA on a GPU), or ordinary pageable memory (the file read into a buffer).
 */
export type WeightStaging = 'pinned_host' | 'pageable';

export type HostWeights =
  | { readonly kind: 'pageable'; readonly tensors: readonly WeightTensor[] }
  | { readonly kind: 'pinned_host'; readonly buffers: readonly DeviceBuffer[] };

/** The weight cache's device side on PJRT; device copies are buffers in device memory. */
export class PjrtWeightBackend implements WeightBackend<HostWeights, readonly DeviceBuffer[]> {
  readonly staging: WeightStaging;
  readonly #runtime: Runtime;
  readonly #sources: Map<string, WeightSource> = new Map();

  /** `staging` defaults to pinned_host where the runtime's device 0 has that memory space. */
  constructor(runtime: Runtime, staging?: WeightStaging) {
    this.#runtime = runtime;
    this.staging = staging ?? (runtime.memoryKinds(0).includes('pinned_host') ? 'pinned_host' : 'pageable');
  }

  setSource(model: string, source: WeightSource): void {
    this.#sources.set(model, source);
  }

  removeSource(model: string): void {
    this.#sources.delete(model);
  }

  async readHost(model: string): Promise<HostWeights> {
    const src = this.#sources.get(model);
    if (!src) throw new ServeError('HLO_ERR_MODEL_NOT_FOUND', `no weights registered for model '${model}'`);
    if (src.path === null) return { kind: 'pageable', tensors: [] };
    const path = src.path;
    const file = await readSafetensors(path);
    const tensors = src.argumentOrder.map((name) => {
      const t = file.tensor(name);
      if (!t) throw new ServeError('HLO_ERR_BUNDLE_INVALID', `${path}: tensor '${name}' of argument_order is missing`);
      return { name, dtype: t.dtype, shape: t.shape, data: t.data };
    });
    if (this.staging === 'pageable') return { kind: 'pageable', tensors };
    // The file buffer is dropped once its tensors sit in pinned memory.
    return { kind: 'pinned_host', buffers: await uploadTensors(this.#runtime, tensors, 'pinned_host') };
  }

  releaseHost(_model: string, host: HostWeights): void {
    if (host.kind === 'pinned_host') for (const b of host.buffers) b.dispose();
  }

  async upload(_model: string, host: HostWeights): Promise<readonly DeviceBuffer[]> {
    if (host.kind === 'pageable') return uploadTensors(this.#runtime, host.tensors);
    // One batched native call: a model's tensors cost one thread hop and overlap their copies,
    // instead of a hop and an event wait per tensor (bench/RESULTS.md, "Weight staging").
    return this.#runtime.copyTo(host.buffers, 'device');
  }

  free(_model: string, device: readonly DeviceBuffer[]): void {
    for (const b of device) b.dispose();
  }
}
