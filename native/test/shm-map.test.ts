import assert from 'node:assert/strict';
import { closeSync, ftruncateSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, suite, test } from 'node:test';
import { hostArray, mapSharedMemory, Runtime, sharedMemoryFaulted } from '../lib/index.js';
import { IDENTITY } from './programs.js';

/**
 * A registered window mapped once and read in place. The owner may truncate the object while the
 * mapping is read (by the JS thread or by PJRT's copy on another thread): the process must not
 * die of SIGBUS, the read sees zeros, and the mapping reports itself faulted.
 */
suite('shared memory mapped in place', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hlo-shm-map-'));
  let rt: Runtime;
  before(async () => {
    rt = await Runtime.create();
  });
  after(() => {
    rt.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  function object(name: string, bytes: number): number {
    const path = join(dir, name);
    const data = Buffer.alloc(bytes);
    for (let i = 0; i < bytes; i++) data[i] = i % 251;
    writeFileSync(path, data);
    return openSync(path, 'r+');
  }

  test('a window at an unaligned offset reads and writes the object in place, and executes from it', async () => {
    const fd = object('a', 3 * 4096);
    try {
      const m = mapSharedMemory(fd, 4100, 8000)!;
      // 4100 is not 64-byte aligned: the CPU plugin cannot alias it and must copy instead.
      const exe = await rt.compile(IDENTITY('2000', 'f32'));
      const [out] = await exe.run([hostArray('f32', [2000], m)]);
      assert.deepEqual([...out!.data], [...m]);
      exe.dispose();
      assert.equal(m.byteLength, 8000);
      assert.equal(m[0], 4100 % 251);
      m[1] = 7;
      const again = mapSharedMemory(fd, 4101, 1)!;
      assert.equal(again[0], 7);
      assert.equal(sharedMemoryFaulted(m), false);
    } finally {
      closeSync(fd);
    }
  });

  test('BAD CALL - truncated under a read on the JS thread: zeros and faulted, no crash', () => {
    const fd = object('b', 64 * 1024);
    try {
      const m = mapSharedMemory(fd, 0, 64 * 1024)!;
      ftruncateSync(fd, 4096);
      let sum = 0;
      for (let i = 4096; i < m.byteLength; i += 512) sum += m[i]!;
      assert.equal(sum, 0);
      assert.equal(sharedMemoryFaulted(m.subarray(8192)), true);
      // Another mapping of a still-valid window is unaffected.
      const fresh = mapSharedMemory(fd, 0, 4096)!;
      assert.equal(sharedMemoryFaulted(fresh), false);
    } finally {
      closeSync(fd);
    }
  });

  test('BAD CALL - truncated before PJRT copies the mapped input: the execution completes on zeros, faulted', async () => {
    const n = 256 * 1024;
    const fd = object('c', n * 4);
    try {
      const m = mapSharedMemory(fd, 0, n * 4)!;
      const exe = await rt.compile(IDENTITY(`${n}`, 'f32'));
      const [ok] = await exe.run([hostArray('f32', [n], m)]);
      assert.deepEqual([...ok!.data.subarray(0, 8)], [...m.subarray(0, 8)]);
      assert.equal(sharedMemoryFaulted(m), false);
      ftruncateSync(fd, 0);
      const [out] = await exe.run([hostArray('f32', [n], m)]);
      assert.equal(out!.data.byteLength, n * 4);
      assert.equal(sharedMemoryFaulted(m), true);
      exe.dispose();
    } finally {
      closeSync(fd);
    }
  });
});
