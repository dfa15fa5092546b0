import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { suite, test } from 'node:test';
import { Script } from 'node:vm';
import { bundleIdentity, decodeCodeCache, encodeCodeCache } from '../src/bundle-code-cache.js';

const source = '(function () { return [1, 2, 3].map((x) => x * 2).join(","); });';
const bundle = Buffer.from(source, 'latin1');
const v8Payload = (): Buffer => new Script(source, { filename: 'cache-test.js' }).createCachedData();

suite('the bundled CLI code cache file (bundle-code-cache.ts)', () => {
  test('a file written for a bundle is read back for it, and V8 accepts what comes out', () => {
    const id = bundleIdentity(bundle, null);
    const read = decodeCodeCache(encodeCodeCache(v8Payload(), id), id);
    assert.ok('payload' in read, JSON.stringify(read));
    const script = new Script(source, { filename: 'cache-test.js', cachedData: read.payload });
    assert.equal(script.cachedDataRejected, false);
    assert.equal((script.runInThisContext() as () => string)(), '2,4,6');
  });

  test('a damaged payload, a cut-short file and a bare V8 cache are refused, never handed to V8', () => {
    const id = bundleIdentity(bundle, null);
    const file = encodeCodeCache(v8Payload(), id);
    for (const at of [file.length - 1, Math.floor(file.length / 2), 8 + 32 + 32]) {
      const damaged = Buffer.from(file);
      damaged[at]! ^= 0x01;
      assert.deepEqual(decodeCodeCache(damaged, id), { refused: 'damaged' }, `byte ${at}`);
    }
    assert.deepEqual(decodeCodeCache(file.subarray(0, file.length - 7), id), { refused: 'damaged' });
    assert.deepEqual(decodeCodeCache(file.subarray(0, 60), id), { refused: 'format' });
    assert.deepEqual(decodeCodeCache(Buffer.alloc(0), id), { refused: 'format' });
    // What session 13's entry point wrote: V8's data alone.
    assert.deepEqual(decodeCodeCache(v8Payload(), id), { refused: 'format' });
  });

  test('a cache made from another bundle is refused, even one of the same length (which V8 takes)', () => {
    const other = Buffer.from(source.replace('* 2', '* 3'), 'latin1');
    assert.equal(other.length, bundle.length);
    const file = encodeCodeCache(v8Payload(), bundleIdentity(bundle, null));
    assert.deepEqual(decodeCodeCache(file, bundleIdentity(other, null)), { refused: 'bundle' });
  });

  test("the bundle's identity is the build's SHA-256 when the length matches, else hashed now", () => {
    const hex = createHash('sha256').update(bundle).digest('hex');
    assert.equal(bundleIdentity(bundle, null).toString('hex'), hex);
    const recorded = { sha256: 'ab'.repeat(32), bytes: bundle.length };
    assert.equal(bundleIdentity(bundle, recorded).toString('hex'), 'ab'.repeat(32));
    // A bundle replaced without its entry point (another length), or a malformed record: hashed.
    assert.equal(bundleIdentity(bundle, { ...recorded, bytes: bundle.length + 1 }).toString('hex'), hex);
    assert.equal(bundleIdentity(bundle, { sha256: 'xyz', bytes: bundle.length }).toString('hex'), hex);
  });
});
