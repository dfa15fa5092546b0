import assert from 'node:assert/strict';
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  truncateSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, suite, test } from 'node:test';
import { ServeError } from '@hloserve/common/errors';
import { IN_PLACE_WRITE_MAX_BYTES, SharedMemoryRegistry } from '../../src/transports/shared-memory.js';

suite('system shared memory registry', () => {
  const root = mkdtempSync(join(tmpdir(), 'hlo-shm-'));
  after(() => rmSync(root, { recursive: true, force: true }));
  writeFileSync(join(root, 'obj'), Buffer.from(Array.from({ length: 64 }, (_, i) => i)));
  const reg = new SharedMemoryRegistry(root);
  const code = (c: string) => (e: unknown) => e instanceof ServeError && e.code === c;

  test('register, read and write inside the window', async () => {
    reg.register('r', '/obj', 16, 32);
    assert.deepEqual([...(await reg.read('r', 0, 4))], [16, 17, 18, 19]);
    await reg.write('r', 4, 4, Uint8Array.of(9, 9, 9, 9));
    assert.deepEqual([...readFileSync(join(root, 'obj')).subarray(20, 24)], [9, 9, 9, 9]);
    assert.deepEqual(reg.status('r'), [{ name: 'r', key: '/obj', offset: 16, byteSize: 32 }]);
  });

  test('BAD CALL - out-of-bounds registration and access', async () => {
    assert.throws(() => reg.register('x', '/obj', 60, 8), code('HLO_ERR_SHM_INVALID'));
    assert.throws(() => reg.register('x', '/obj', 0, 0), code('HLO_ERR_SHM_INVALID'));
    assert.throws(() => reg.register('x', '/missing', 0, 8), code('HLO_ERR_SHM_INVALID'));
    assert.throws(() => reg.register('x', '/../etc/passwd', 0, 8), code('HLO_ERR_SHM_INVALID'));
    assert.throws(() => reg.check('r', 30, 4), code('HLO_ERR_SHM_INVALID'));
    await assert.rejects(reg.read('r', 30, 4), code('HLO_ERR_SHM_INVALID'));
    await assert.rejects(reg.read('r', -1, 4), code('HLO_ERR_SHM_INVALID'));
    await assert.rejects(reg.write('r', 0, 2, Uint8Array.of(1, 2, 3)), code('HLO_ERR_SHM_INVALID'));
  });

  test('unknown regions are FAILED_PRECONDITION; unregister is idempotent', async () => {
    assert.throws(() => reg.check('nope', 0, 1), code('HLO_ERR_SHM_REGION_UNKNOWN'));
    await assert.rejects(reg.read('nope', 0, 1), code('HLO_ERR_SHM_REGION_UNKNOWN'));
    reg.unregister('nope');
    reg.unregister('r');
    await assert.rejects(reg.read('r', 0, 1), code('HLO_ERR_SHM_REGION_UNKNOWN'));
    reg.register('a', 'obj', 0, 8);
    reg.register('b', 'obj', 8, 8);
    reg.unregister('');
    assert.equal(reg.size, 0);
  });

  test('BAD CALL - a key that is a symbolic link is not followed, so outputs never land outside the root', () => {
    const outside = mkdtempSync(join(tmpdir(), 'hlo-victim-'));
    try {
      writeFileSync(join(outside, 'victim'), Buffer.alloc(64, 7));
      symlinkSync(join(outside, 'victim'), join(root, 'link'));
      assert.throws(
        () => reg.register('l', '/link', 0, 8),
        (e: unknown) => e instanceof ServeError && e.code === 'HLO_ERR_SHM_INVALID' && /symbolic link/.test(e.message),
      );
      assert.deepEqual(readFileSync(join(outside, 'victim')), Buffer.alloc(64, 7));
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });

  test('BAD CALL - a key that is a directory, or a name past the limit, is refused', () => {
    mkdirSync(join(root, 'dir'));
    assert.throws(() => reg.register('d', '/dir', 0, 8), code('HLO_ERR_SHM_INVALID'));
    const long = 'r'.repeat(2 ** 20);
    assert.throws(
      () => reg.register(long, '/obj', 0, 8),
      (e: unknown) => e instanceof ServeError && e.code === 'HLO_ERR_SHM_INVALID' && e.message.length < 200,
    );
  });

  const shmInvalid = (pattern: RegExp) => (e: unknown) =>
    e instanceof ServeError && e.code === 'HLO_ERR_SHM_INVALID' && pattern.test(e.message);

  test('BAD CALL - an object truncated by its owner while registered: a clean error, nothing grown', async () => {
    writeFileSync(join(root, 'shrinks'), Buffer.alloc(4096, 1));
    reg.register('t', '/shrinks', 1024, 2048);
    assert.equal((await reg.read('t', 0, 2048)).byteLength, 2048);
    truncateSync(join(root, 'shrinks'), 2000);
    await assert.rejects(reg.read('t', 0, 16), shmInvalid(/'t'.*truncated by its owner to 2000 bytes/));
    await assert.rejects(reg.write('t', 1500, 16, Buffer.alloc(16, 2)), shmInvalid(/truncated/));
    // A write past the new end would have grown the owner's object again.
    assert.equal(readFileSync(join(root, 'shrinks')).byteLength, 2000);
    truncateSync(join(root, 'shrinks'), 0);
    await assert.rejects(reg.read('t', 0, 1), shmInvalid(/truncated/));
    // Growing it back makes the region usable again: the check is made on every access.
    truncateSync(join(root, 'shrinks'), 4096);
    assert.deepEqual([...(await reg.read('t', 0, 2))], [0, 0]);
    reg.unregister('t');
  });

  test('BAD CALL - an object unlinked by its owner while registered: a clean error', async () => {
    writeFileSync(join(root, 'goes'), Buffer.alloc(256, 5));
    reg.register('u', '/goes', 0, 256);
    unlinkSync(join(root, 'goes'));
    await assert.rejects(reg.read('u', 0, 8), shmInvalid(/'u'.*unlinked by its owner/));
    await assert.rejects(reg.write('u', 0, 8, Buffer.alloc(8)), shmInvalid(/unlinked/));
    // A new object under the same key is not silently the registered one: it needs registering.
    writeFileSync(join(root, 'goes'), Buffer.alloc(256, 6));
    await assert.rejects(reg.read('u', 0, 8), shmInvalid(/unlinked/));
    reg.register('u', '/goes', 0, 256);
    assert.deepEqual([...(await reg.read('u', 0, 2))], [6, 6]);
    reg.unregister('u');
  });

  test('BAD CALL - an object truncated after an in-place read: the view reads zeros, the request and later reads fail, registering again serves', async () => {
    const path = join(root, 'inplace');
    writeFileSync(path, Buffer.alloc(64 * 1024, 5));
    reg.register('ip', '/inplace', 0, 64 * 1024);
    const view = await reg.read('ip', 8192, 4096);
    assert.equal(view[0], 5);
    reg.assertIntact('ip', view);
    truncateSync(path, 4096);
    assert.equal(view[100], 0); // SIGBUS caught: the mapping now holds zeros
    assert.throws(() => reg.assertIntact('ip', view), /truncated by its owner while it was read/);
    await assert.rejects(reg.read('ip', 0, 16), code('HLO_ERR_SHM_INVALID'));
    writeFileSync(path, Buffer.alloc(64 * 1024, 6));
    await assert.rejects(reg.read('ip', 0, 16), /register it again/);
    reg.register('ip', '/inplace', 0, 64 * 1024);
    assert.equal((await reg.read('ip', 8192, 16))[0], 6);
    reg.unregister('ip');
  });

  test('outputs land in the object: small ones copied into the mapping, large ones with pwrite', async () => {
    const size = IN_PLACE_WRITE_MAX_BYTES * 4;
    const path = join(root, 'outs');
    writeFileSync(path, Buffer.alloc(size + 4096, 0));
    reg.register('o', '/outs', 4096, size);
    await reg.write('o', 8, 4, Uint8Array.of(1, 2, 3, 4));
    const large = Buffer.alloc(IN_PLACE_WRITE_MAX_BYTES * 2, 7);
    await reg.write('o', IN_PLACE_WRITE_MAX_BYTES, large.byteLength, large);
    const file = readFileSync(path);
    assert.deepEqual([...file.subarray(4096 + 8, 4096 + 12)], [1, 2, 3, 4]);
    assert.ok(
      file.subarray(4096 + IN_PLACE_WRITE_MAX_BYTES, 4096 + IN_PLACE_WRITE_MAX_BYTES * 3).every((v) => v === 7),
    );
    assert.equal(file[4096 + IN_PLACE_WRITE_MAX_BYTES * 3], 0);
    // The bounds hold on the in-place path as on pwrite's.
    await assert.rejects(reg.write('o', size - 2, 4, Uint8Array.of(1, 2, 3, 4)), code('HLO_ERR_SHM_INVALID'));
    assert.equal(readFileSync(path).byteLength, size + 4096);
    reg.unregister('o');
  });

  test('unregistering while copies are in flight: they finish from the same object', async () => {
    const big = 16 << 20;
    writeFileSync(join(root, 'big'), Buffer.alloc(big, 3));
    reg.register('big', '/big', 0, big);
    const reads = [reg.read('big', 0, big), reg.read('big', 0, big)];
    const write = reg.write('big', 0, 4, Uint8Array.of(1, 2, 3, 4));
    reg.unregister('big');
    // Descriptors opened now would take the number of a descriptor closed too early.
    writeFileSync(join(root, 'other'), Buffer.alloc(big, 9));
    reg.register('other', '/other', 0, big);
    const [a, b] = await Promise.all(reads);
    await write;
    for (const r of [a!, b!]) {
      assert.equal(r.byteLength, big);
      assert.ok(r.subarray(4).every((v) => v === 3));
    }
    assert.deepEqual([...readFileSync(join(root, 'other')).subarray(0, 4)], [9, 9, 9, 9]);
    reg.unregister('other');
  });
});
