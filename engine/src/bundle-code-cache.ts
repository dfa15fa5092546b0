/**
 * The bundled CLI's V8 code cache on disk, checked before V8 sees it. V8 (11.3, Node 20) checks
 * only a cache's header: its own version, the V8 flags, and the source's length. It does not
 * checksum the payload in a release build (--verify-snapshot-checksum is off), so a damaged cache
 * with an intact header is deserialized as it is and the process dies ("Fatal error ... unreachable
 * code"), on every start, since a start that V8 did not refuse writes no new cache. And a bundle
 * rebuilt to the same length would run another bundle's compiled code. Hence a header of our own:
 * a magic, the bundle's identity, and the SHA-256 of the payload (about 1 ms for its 2 MB), and a
 * file that fails any of them is not used (and is rewritten once the server is ready).
 *
 * Imports only Node's own modules: scripts/bundle-engine.mjs copies the compiled file beside the
 * bundle, where the bundled start (bundled-start.ts) imports it.
 */
import { createHash } from 'node:crypto';

const MAGIC = Buffer.from('HLOV8CC1', 'latin1');
const HASH_BYTES = 32;
const HEADER_BYTES = MAGIC.length + 2 * HASH_BYTES;

const sha256 = (data: Uint8Array): Buffer => createHash('sha256').update(data).digest();

/**
 * The bundle's identity: the SHA-256 of its bytes, which scripts/bundle-engine.mjs computes once
 * at build time and writes into the bundled start (`built`, hex, with the byte count it was taken
 * over). A bundle whose length is not the recorded one (replaced without its bundled start) is hashed
 * here instead (~3 ms); one left unbuilt records nothing and is hashed here too.
 */
export function bundleIdentity(bundle: Uint8Array, built: { sha256: string; bytes: number } | null): Buffer {
  if (built !== null && built.bytes === bundle.length && /^[0-9a-f]{64}$/.test(built.sha256))
    return Buffer.from(built.sha256, 'hex');
  return sha256(bundle);
}

/** The file's bytes for a payload V8 produced (`script.createCachedData()`) from this bundle. */
export function encodeCodeCache(payload: Uint8Array, identity: Buffer): Buffer {
  return Buffer.concat([MAGIC, identity, sha256(payload), payload]);
}

/**
 * The payload to hand V8, or why not: a file of another format, made from another bundle, cut
 * short or damaged is refused here, never given to V8.
 */
export function decodeCodeCache(
  file: Buffer,
  identity: Buffer,
): { payload: Buffer } | { refused: 'format' | 'bundle' | 'damaged' } {
  if (file.length <= HEADER_BYTES || !file.subarray(0, MAGIC.length).equals(MAGIC)) return { refused: 'format' };
  if (!file.subarray(MAGIC.length, MAGIC.length + HASH_BYTES).equals(identity)) return { refused: 'bundle' };
  const payload = file.subarray(HEADER_BYTES);
  if (!sha256(payload).equals(file.subarray(MAGIC.length + HASH_BYTES, HEADER_BYTES))) return { refused: 'damaged' };
  return { payload };
}
