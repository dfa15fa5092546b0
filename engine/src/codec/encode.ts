import { toWireDatatype } from '../dtypes.js';
import type { SharedMemoryRegistry } from '../kserve/shared-memory.js';
import type { HostTensor } from '../tensor.js';
import type { RequestedOutput } from './decode.js';
import type { WireOutput } from './wire.js';

/**
 * Builds the response tensors for the requested outputs. Shared-memory outputs are written into
 * the client's region and carry no inline data (Triton's behaviour: tritonclient expects an empty
 * raw entry for them).
 */
export function encodeOutputs(
  requested: readonly RequestedOutput[],
  results: readonly HostTensor[],
  shm: SharedMemoryRegistry | null,
): WireOutput[] {
  return requested.map((r) => {
    const t = results[r.index]!;
    const base = { name: r.spec.name, datatype: toWireDatatype(r.spec.dtype), shape: t.shape };
    if (!r.shm) return { ...base, parameters: {}, data: t.data };
    if (!shm) throw new Error('shared memory output without a registry');
    shm.write(r.shm.region, r.shm.offset, r.shm.byteSize, t.data);
    return {
      ...base,
      parameters: {
        shared_memory_region: r.shm.region,
        shared_memory_byte_size: t.data.byteLength,
        ...(r.shm.offset ? { shared_memory_offset: r.shm.offset } : {}),
      },
      data: null,
    };
  });
}
