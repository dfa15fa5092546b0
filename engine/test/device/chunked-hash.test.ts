import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { HASH_SLICE_BYTES, sha256InSlices } from '../../src/device/chunked-hash.js';

const plain = (...parts: (Uint8Array | string)[]): Buffer => {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest();
};

test('sha256InSlices is the sha256 of its parts concatenated, at every slice boundary', async () => {
  const bytes = new Uint8Array(3 * HASH_SLICE_BYTES + 5).map((_, i) => (i * 31) & 0xff);
  for (const n of [0, 1, HASH_SLICE_BYTES - 1, HASH_SLICE_BYTES, HASH_SLICE_BYTES + 1, bytes.length]) {
    const part = bytes.subarray(0, n);
    assert.deepEqual(await sha256InSlices('{"id":1}', '\u0000', part), plain('{"id":1}', '\u0000', part), `${n} bytes`);
  }
});

test('a large input lets the event loop turn between its slices; a small one is hashed at once', async () => {
  const turned = async (n: number): Promise<boolean> => {
    let ran = false;
    setImmediate(() => (ran = true));
    await sha256InSlices(new Uint8Array(n));
    return ran;
  };
  assert.equal(await turned(3 * HASH_SLICE_BYTES), true);
  assert.equal(await turned(HASH_SLICE_BYTES), false);
});
