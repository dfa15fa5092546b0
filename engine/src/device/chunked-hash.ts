/**
 * SHA-256 over large byte arrays without holding the event loop: the compile cache hashes every
 * module it looks up and every executable it reads or writes, on the serving thread, and a large
 * model's were one long stall for every other model's requests (about 1 ms per MB here: 94 ms for
 * 100 MB). Hashed a slice at a time, with a turn of the event loop between slices.
 */
import { createHash } from 'node:crypto';
import { setImmediate as nextTurn } from 'node:timers/promises';

/** Bytes hashed between two turns of the event loop (a few ms of hashing). */
export const HASH_SLICE_BYTES = 4 * 2 ** 20;

/** The sha256 of `parts`, concatenated; a part larger than a slice yields between its slices. */
export async function sha256InSlices(...parts: (Uint8Array | string)[]): Promise<Buffer> {
  const hash = createHash('sha256');
  for (const part of parts) {
    if (typeof part === 'string' || part.byteLength <= HASH_SLICE_BYTES) {
      hash.update(part);
      continue;
    }
    for (let at = 0; at < part.byteLength; at += HASH_SLICE_BYTES) {
      if (at > 0) await nextTurn();
      hash.update(part.subarray(at, at + HASH_SLICE_BYTES));
    }
  }
  return hash.digest();
}
