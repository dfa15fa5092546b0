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
  // Plain literals, no object spread: V8 runs `{ ...base, more }` through a slow clone (1.6 µs
  // against 0.01 µs for the literal, measured), once per output of every request.
  return requested.map((r) => {
    const t = results[r.index]!;
    const name = r.spec.name;
    const datatype = toWireDatatype(r.spec.dtype);
    if (!r.shm) return { name, datatype, shape: t.shape, parameters: {}, data: t.data };
    if (!shm) throw new Error('shared memory output without a registry');
    shm.write(r.shm.region, r.shm.offset, r.shm.byteSize, t.data);
    const parameters: Record<string, string | number> = {
      shared_memory_region: r.shm.region,
      shared_memory_byte_size: t.data.byteLength,
    };
    if (r.shm.offset) parameters['shared_memory_offset'] = r.shm.offset;
    return { name, datatype, shape: t.shape, parameters, data: null };
  });
}
