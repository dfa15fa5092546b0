import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { BatchBufferPool } from '../../src/scheduler/batch-buffers.js';

suite('BatchBufferPool', () => {
  test('a buffer given back is taken again for the same size, not for another', () => {
    const pool = new BatchBufferPool(1 << 20, 2);
    const a = pool.take(4096);
    assert.equal(a.byteLength, 4096);
    pool.give(a);
    assert.equal(pool.idleBytes, 4096);
    const other = pool.take(8192);
    assert.notEqual(other, a);
    assert.equal(pool.take(4096), a);
    assert.equal(pool.idleBytes, 0);
    assert.notEqual(pool.take(4096), a, 'a buffer is handed out once until given back');
  });

  test('holds at most maxPerSize buffers of one size and maxIdleBytes in all', () => {
    const pool = new BatchBufferPool(10_000, 2);
    const [a, b, c] = [pool.take(3000), pool.take(3000), pool.take(3000)];
    for (const x of [a, b, c]) pool.give(x);
    assert.equal(pool.idleBytes, 6000, 'the third of one size is left to the collector');
    pool.give(pool.take(5000)); // 6000 + 5000 would exceed 10 000
    assert.equal(pool.idleBytes, 6000);
    pool.give(Buffer.allocUnsafe(4000));
    assert.equal(pool.idleBytes, 10_000);
    pool.clear();
    assert.equal(pool.idleBytes, 0);
    assert.notEqual(pool.take(3000), a);
  });
});
