import type { DeviceArena, DeviceBuffer, Runtime } from '@hloserve/native';
import { readSafetensorsData } from '../bundle/safetensors-data.js';
import { ServeError } from '@hloserve/common/errors';
import { uploadTensors, type WeightTensor } from '../model/compiled-model.js';
import type { WeightBackend } from './weight-backend.js';
import type { WeightSource } from '../model/model-version.js';

export type { WeightSource } from '../model/model-version.js';

/**
 * Where host copies of weights live: the runtime's pinned host memory space (a cold load is then
 * a device-side copy, a DMA on a GPU), or ordinary pageable memory (the file read into a buffer).
 * With a device arena they are pageable: there the device is host memory too, and a load is a
 * memcpy into the arena.
 */
export type WeightStaging = 'pinned_host' | 'pageable';

export type HostWeights =
  | { readonly kind: 'pageable'; readonly tensors: readonly WeightTensor[] }
  | { readonly kind: 'pinned_host'; readonly buffers: readonly DeviceBuffer[] };

/**
 * How much a device arena may map for a cache budget: the budget, plus room for the views of one
 * evicted model kept for its return (the largest model's weights; a model larger than the budget
 * loads alone, so it needs that much too) or for what first-fit placement leaves unusable between
 * ranges (a quarter of the budget), whichever is more, and 1 MiB. A load that still finds no room
 * falls back to the runtime's allocation, so this bounds memory, not correctness.
 */
export function arenaLimit(budgetBytes: number, largestModelBytes = 0): number {
  return budgetBytes + Math.max(Math.ceil(budgetBytes / 4), largestModelBytes) + (1 << 20);
}

export interface PjrtWeightBackendOptions {
  /** Default: pageable with an arena, else pinned_host where device 0 has that memory space. */
  readonly staging?: WeightStaging;
  /**
   * Device memory to load into where the device is host memory (Runtime.createArena). A load that
   * does not fit there (fragmentation, device-pinned models beyond the budget) takes the runtime's
   * own allocation instead.
   */
  readonly arena?: DeviceArena;
}

/** The weight cache's device side on PJRT; device copies are buffers in device memory. */
export class PjrtWeightBackend implements WeightBackend<HostWeights, readonly DeviceBuffer[], WeightSource> {
  readonly staging: WeightStaging;
  readonly arena: DeviceArena | null;
  readonly #runtime: Runtime;
  /** Device copies that live in the arena (they can be reused after eviction). */
  readonly #inArena = new WeakSet<readonly DeviceBuffer[]>();
  /** Arena views of evicted models waiting for reuse, oldest first, with their tensor signature. */
  #spares: { readonly key: string; readonly views: readonly DeviceBuffer[] }[] = [];

  constructor(runtime: Runtime, options: PjrtWeightBackendOptions = {}) {
    this.#runtime = runtime;
    this.arena = options.arena ?? null;
    this.staging =
      options.staging ??
      (this.arena === null && runtime.memoryKinds(0).includes('pinned_host') ? 'pinned_host' : 'pageable');
  }

  async readHost(_model: string, src: WeightSource): Promise<HostWeights> {
    if (src.path === null) return { kind: 'pageable', tensors: [] };
    const path = src.path;
    const file = await readSafetensorsData(path, src.argumentOrder);
    const byName = new Map(file.tensors.map((t) => [t.name, t]));
    const tensors = src.argumentOrder.map((name) => {
      const t = byName.get(name);
      if (!t) throw new ServeError('HLO_ERR_BUNDLE_INVALID', `${path}: tensor '${name}' of argument_order is missing`);
      return { name, dtype: t.dtype, shape: t.shape, data: t.data };
    });
    if (this.staging === 'pageable') return { kind: 'pageable', tensors };
    // The file buffer is dropped once its tensors sit in pinned memory.
    return { kind: 'pinned_host', buffers: await uploadTensors(this.#runtime, tensors, 'pinned_host') };
  }

  releaseHost(_model: string, host: HostWeights): void {
    // Off the JS thread, as free() does: a host copy's memory goes back with an munmap that took
    // 100-165 ms for a 2.7 GB model, every model's requests waiting (bench/RESULTS.md, session 22).
    if (host.kind === 'pinned_host') this.#runtime.disposeInBackground(host.buffers);
  }

  async upload(_model: string, host: HostWeights): Promise<readonly DeviceBuffer[]> {
    if (host.kind === 'pageable') {
      const placed = this.arena === null ? null : await this.#intoArena(this.arena, host.tensors);
      return placed ?? uploadTensors(this.#runtime, host.tensors);
    }
    // One batched native call: a model's tensors cost one thread hop and overlap their copies,
    // instead of a hop and an event wait per tensor (bench/RESULTS.md, "Weight staging").
    return this.#runtime.copyTo(host.buffers, 'device');
  }

  free(_model: string, device: readonly DeviceBuffer[]): void {
    // Arena views are kept for the next model with the same tensors: reusing them costs a memcpy
    // and makes no buffers (bench/RESULTS.md, "Session 5: the device arena").
    if (this.#inArena.has(device)) this.#spares.push({ key: signature(device), views: device });
    // Host memory coming back a little later is harmless, and the CPU plugin's frees (munmap) are
    // slow enough to matter in the cold call that evicted them; device memory goes back at once.
    else if (this.#runtime.hostAddressableDevice) this.#runtime.disposeInBackground(device);
    else for (const b of device) b.dispose();
  }

  /** Frees the views kept for reuse. */
  dispose(): void {
    while (this.#spares.length > 0) this.#dropOldestSpare();
  }

  async #intoArena(arena: DeviceArena, tensors: readonly WeightTensor[]): Promise<readonly DeviceBuffer[] | null> {
    const key = signature(tensors);
    const i = this.#spares.findLastIndex((s) => s.key === key);
    if (i >= 0) {
      const { views } = this.#spares.splice(i, 1)[0]!;
      try {
        return await arena.refill(views, tensors);
      } catch {
        // Views that cannot be refilled (a disposed runtime) are dropped; placing anew reports why.
        for (const b of views) b.dispose();
      }
    }
    // The room may be held by views kept for other shapes: give up the oldest until the free bytes
    // could hold these tensors (a placement that fails anyway, to fragmentation, copies nothing and
    // gives up more). Weights that would not fit even then keep the views and load outside.
    const need = tensors.reduce((n, t) => n + t.data.byteLength + ARENA_ALIGN, 0);
    const s = arena.stats();
    let free = s.limitBytes - s.usedBytes;
    const kept = this.#spares.reduce((n, x) => n + x.views.reduce((m, b) => m + b.onDeviceBytes, 0), 0);
    if (free + kept < need) return null;
    for (;;) {
      while (free < need && this.#spares.length > 0) free += this.#dropOldestSpare();
      const placed = await arena.place(tensors);
      if (placed !== null) {
        this.#inArena.add(placed);
        return placed;
      }
      if (this.#spares.length === 0) return null;
      free = 0; // fragmented: make more room
    }
  }

  /** Disposes the oldest kept views; returns about how many arena bytes that frees. */
  #dropOldestSpare(): number {
    const oldest = this.#spares.shift();
    if (oldest === undefined) return 0;
    let bytes = 0;
    for (const b of oldest.views) {
      bytes += b.onDeviceBytes;
      b.dispose();
    }
    return bytes;
  }
}

/** Ranges in a device arena start on this boundary (DeviceArena::kAlign in the addon). */
const ARENA_ALIGN = 128;

/** dtype and shape of every tensor, in order: which arena views a model's weights can reuse. */
function signature(tensors: readonly { readonly dtype: string; readonly shape: readonly number[] }[]): string {
  let key = '';
  for (const t of tensors) key += `${t.dtype}[${t.shape.join(',')}]`;
  return key;
}
