import type { NativeBuffer } from './binding.js';
import { type BufferFacts, DeviceBuffer, type MemoryResolver } from './device-buffer.js';

/** Bytes a lane should carry at least, so that its thread hop stays small against its copying. */
const LANE_BYTES = 1 << 20;

/**
 * How many of the addon's threads one batch of weight copies may take at once: all but two, which
 * stay with executions. The threads run tasks in order, so a model's load that copied on every
 * thread held every other model's executions behind it for as long as its longest lane: a request
 * waited 1 s while a 2.7 GB model reloaded (bench/RESULTS.md, session 22).
 */
export function copyThreads(threads: number): number {
  return Math.max(1, threads - 2);
}

/**
 * Splits a batch of copies into lanes, one native call each. A lane's copies run one after another
 * on one addon thread (the CPU plugin copies synchronously), so large batches are spread over the
 * addon's threads, balanced by bytes (largest first onto the least loaded lane); small ones stay in
 * one lane, where a hop per lane would cost more than the copying. Returns indices into `bytes`.
 */
export function byteLanes(bytes: readonly number[], threads: number): number[][] {
  const total = bytes.reduce((s, b) => s + b, 0);
  const count = Math.max(1, Math.min(threads, bytes.length, Math.floor(total / LANE_BYTES)));
  const lanes: number[][] = Array.from({ length: count }, () => []);
  const load = new Array<number>(count).fill(0);
  const order = bytes.map((_, i) => i).sort((a, b) => bytes[b]! - bytes[a]!);
  for (const i of order) {
    let l = 0;
    for (let k = 1; k < count; k++) if (load[k]! < load[l]!) l = k;
    lanes[l]!.push(i);
    load[l]! += bytes[i]!;
  }
  return lanes;
}

/**
 * Waits for every lane and puts the buffers back in input order. When a lane failed, the buffers
 * of the others are disposed and the first failure is thrown: no copy survives a failed batch.
 */
export async function joinLanes(
  lanes: readonly (readonly number[])[],
  pending: readonly Promise<NativeBuffer[]>[],
  memories: MemoryResolver,
  facts?: readonly BufferFacts[],
): Promise<DeviceBuffer[]> {
  const settled = await Promise.allSettled(pending);
  const out = new Array<DeviceBuffer>(lanes.reduce((n, l) => n + l.length, 0));
  let failure: unknown = null;
  settled.forEach((r, l) => {
    if (r.status === 'rejected') failure ??= r.reason;
    else
      r.value.forEach((n, j) => {
        const i = lanes[l]![j]!;
        out[i] = new DeviceBuffer(n, memories, facts?.[i]);
      });
  });
  if (failure !== null) {
    for (const b of out) b?.dispose();
    throw failure;
  }
  return out;
}
