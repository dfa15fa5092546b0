import { toWireDatatype } from '../dtypes.js';
import type { SharedMemoryRegistry } from '../transports/shared-memory.js';
import type { HostTensor } from '../tensor.js';
import type { RequestedOutput } from './decode.js';
import type { ParamValue, Params, WireOutput } from '@hloserve/common/wire';

/**
 * Builds the response tensors for the requested outputs. Shared-memory outputs carry no inline
 * data (Triton's behaviour: tritonclient expects an empty raw entry for them); writeSharedOutputs
 * puts their bytes into the client's region.
 */
export function encodeOutputs(
  requested: readonly RequestedOutput[],
  results: readonly HostTensor[],
  shm: SharedMemoryRegistry | null,
): WireOutput[] {
  const out: WireOutput[] = [];
  for (const r of requested) {
    const t = results[r.index]!;
    const datatype = toWireDatatype(r.spec.dtype);
    if (!r.shm) {
      out.push(new OutputTensor(r.spec.name, datatype, t.shape, {}, t.data));
      continue;
    }
    if (!shm) throw new Error('shared memory output without a registry');
    const parameters: Record<string, ParamValue> = {
      shared_memory_region: r.shm.region,
      shared_memory_byte_size: t.data.byteLength,
    };
    if (r.shm.offset) parameters['shared_memory_offset'] = r.shm.offset;
    out.push(new OutputTensor(r.spec.name, datatype, t.shape, parameters, null));
  }
  return out;
}

/**
 * One response tensor. A class: every instance has one shape from the start, where the spread
 * form it replaced paid a map migration per request and kept about 4x more bytes alive through
 * each scavenge (bench/RESULTS.md, session 4; that win needs the server's V8 heap settings, see
 * docs/configuration.md, "Node.js flags").
 */
class OutputTensor implements WireOutput {
  constructor(
    readonly name: string,
    readonly datatype: string,
    readonly shape: readonly number[],
    readonly parameters: Params,
    readonly data: Uint8Array | null,
  ) {}
}

/** Writes the shared-memory outputs into their regions, on the native addon's threads. */
export async function writeSharedOutputs(
  requested: readonly RequestedOutput[],
  results: readonly HostTensor[],
  shm: SharedMemoryRegistry,
): Promise<void> {
  const writes: Promise<void>[] = [];
  for (const r of requested) {
    if (r.shm) writes.push(shm.write(r.shm.region, r.shm.offset, r.shm.byteSize, results[r.index]!.data));
  }
  await Promise.all(writes);
}
