/**
 * The device side of the weight cache, injected so the cache's policy is testable without a
 * device. H is the host copy (e.g. the safetensors tensors as buffers), D the device copy (e.g.
 * PJRT buffers in argument_order). The cache never looks inside either.
 */
export interface WeightBackend<H, D, S = unknown> {
  /** Reads the model's weights from `source` (as registered with the cache) into host memory. */
  readHost(model: string, source: S): Promise<H>;
  /** Drops a host copy the cache no longer needs (munmap, let GC have it); optional. */
  releaseHost?(model: string, host: H): void;
  /** Copies host weights to the device. */
  upload(model: string, host: H): Promise<D>;
  /** Frees the device copy now (never called while a lease on it is held). */
  free(model: string, device: D): void;
}
