import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, suite, test } from 'node:test';
import { ServeError } from '@hloserve/common/errors';
import { SharedMemoryRegistry } from '../../src/kserve/shared-memory.js';

suite('system shared memory registry', () => {
  const root = mkdtempSync(join(tmpdir(), 'hlo-shm-'));
  after(() => rmSync(root, { recursive: true, force: true }));
  writeFileSync(join(root, 'obj'), Buffer.from(Array.from({ length: 64 }, (_, i) => i)));
  const reg = new SharedMemoryRegistry(root);
  const code = (c: string) => (e: unknown) => e instanceof ServeError && e.code === c;

  test('register, read and write inside the window', () => {
    reg.register('r', '/obj', 16, 32);
    assert.deepEqual([...reg.read('r', 0, 4)], [16, 17, 18, 19]);
    reg.write('r', 4, 4, Uint8Array.of(9, 9, 9, 9));
    assert.deepEqual([...readFileSync(join(root, 'obj')).subarray(20, 24)], [9, 9, 9, 9]);
    assert.deepEqual(reg.status('r'), [{ name: 'r', key: '/obj', offset: 16, byteSize: 32 }]);
  });

  test('BAD CALL - out-of-bounds registration and access', () => {
    assert.throws(() => reg.register('x', '/obj', 60, 8), code('HLO_ERR_SHM_INVALID'));
    assert.throws(() => reg.register('x', '/obj', 0, 0), code('HLO_ERR_SHM_INVALID'));
    assert.throws(() => reg.register('x', '/missing', 0, 8), code('HLO_ERR_SHM_INVALID'));
    assert.throws(() => reg.register('x', '/../etc/passwd', 0, 8), code('HLO_ERR_SHM_INVALID'));
    assert.throws(() => reg.read('r', 30, 4), code('HLO_ERR_SHM_INVALID'));
    assert.throws(() => reg.read('r', -1, 4), code('HLO_ERR_SHM_INVALID'));
    assert.throws(() => reg.write('r', 0, 2, Uint8Array.of(1, 2, 3)), code('HLO_ERR_SHM_INVALID'));
  });

  test('unknown regions are FAILED_PRECONDITION; unregister is idempotent', () => {
    assert.throws(() => reg.read('nope', 0, 1), code('HLO_ERR_SHM_REGION_UNKNOWN'));
    reg.unregister('nope');
    reg.unregister('r');
    assert.throws(() => reg.read('r', 0, 1), code('HLO_ERR_SHM_REGION_UNKNOWN'));
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
});
