/**
 * Sizing the weight cache from the device arena (reference §2.8, same formula and test vectors).
 * The arena is what the allocator may use (mem_fraction of the device); part of it must stay free
 * for executions' scratch (activations, workspaces) measured by a warmup probe, and a wiggle
 * fraction absorbs fragmentation and what the probe missed.
 */
export interface WeightBudget {
  /** Bytes for all weights on the device, device-pinned ones included. */
  readonly weightPool: number;
  /** What remains for on-demand (evictable) weights: the cache's byte budget. */
  readonly onDemand: number;
  /** Device-pinned weights alone exceed the pool: configuration asks for more than fits. */
  readonly pinnedOverCommit: boolean;
}

export function weightBudget(
  arenaBytes: number,
  fraction: number,
  wiggleFraction: number,
  maxScratchBytes: number,
  pinnedBytes: number,
): WeightBudget {
  const scratchCeiling = Math.floor((1 - wiggleFraction) * arenaBytes);
  const weightPool = Math.max(0, Math.min(Math.floor(fraction * arenaBytes), scratchCeiling - maxScratchBytes));
  const onDemand = Math.min(weightPool, Math.max(0, weightPool - pinnedBytes));
  return { weightPool, onDemand, pinnedOverCommit: pinnedBytes > weightPool };
}
