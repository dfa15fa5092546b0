import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { normalizeBatchSizes, planBatch, planScanRows } from '../../src/scheduler/plan-batch.js';

const plan = (rows: number[], sizes: number[], cap: number | null = null) =>
  planBatch(rows, normalizeBatchSizes(sizes), cap);

suite('planBatch (reference §2.5 vectors)', () => {
  test('sizes [1,4,8], rows 2,2,2 -> B=4 takes 2', () => {
    assert.deepEqual(plan([2, 2, 2], [1, 4, 8]), { batchSize: 4, count: 2, rows: 4 });
  });
  test('sizes [4,8], one row -> B=4 padded', () => {
    assert.deepEqual(plan([1], [4, 8]), { batchSize: 4, count: 1, rows: 1 });
  });
  test('sizes [4,8], rows 6,1 -> B=8 takes both', () => {
    assert.deepEqual(plan([6, 1], [4, 8]), { batchSize: 8, count: 2, rows: 7 });
  });
  test('cap 4 with rows 2,2,2,2 -> B=4 takes 2', () => {
    assert.deepEqual(plan([2, 2, 2, 2], [1, 4, 8], 4), { batchSize: 4, count: 2, rows: 4 });
  });
  test('sizes [4,8], cap 2 with rows 1,1,1 -> B=4 takes 2 (pads)', () => {
    assert.deepEqual(plan([1, 1, 1], [4, 8], 2), { batchSize: 4, count: 2, rows: 2 });
  });
  test('sizes [4,8], cap 2 with rows 6,1 -> B=8 takes 1 (forward progress, never split)', () => {
    assert.deepEqual(plan([6, 1], [4, 8], 2), { batchSize: 8, count: 1, rows: 6 });
  });
  test('greedy stops at the first request that does not fit (no overtaking)', () => {
    assert.deepEqual(plan([3, 3, 1], [1, 4, 8]), { batchSize: 4, count: 1, rows: 3 });
  });
  test('an any-batch module ([] or 0) runs the front request alone at key 0', () => {
    assert.deepEqual(plan([5, 1], []), { batchSize: 0, count: 1, rows: 5 });
    assert.deepEqual(plan([5, 1], [0]), { batchSize: 0, count: 1, rows: 5 });
  });
  test('a model that cannot coalesce runs its front request alone at the smallest size holding it', () => {
    assert.deepEqual(planBatch([2, 2], [1, 2, 4], null, { coalescable: false }), { batchSize: 2, count: 1, rows: 2 });
  });
  test('planScanRows bounds how much of a queue planning reads', () => {
    assert.equal(planScanRows([1, 4, 8], null), 8);
    assert.equal(planScanRows([1, 4, 8], 2), 2);
    assert.equal(planScanRows([], null), 1);
    // A prefix cut at the scan bound plans exactly like the whole queue.
    const queue = [2, 2, 2, 2, 2, 2, 2];
    assert.deepEqual(plan(queue.slice(0, 4), [1, 4, 8]), plan(queue, [1, 4, 8]));
  });
});

suite('planBatch: cost-aware size choice', () => {
  const sizes = normalizeBatchSizes([1, 4, 8]);
  test('rows 3,3: a measured B=8 cheaper per row than B=4 takes both', () => {
    const cost = new Map([
      [4, 0.01],
      [8, 0.012],
    ]);
    assert.deepEqual(planBatch([3, 3], sizes, null, { measuredCost: (b) => cost.get(b) }), {
      batchSize: 8,
      count: 2,
      rows: 6,
    });
  });
  test('keeps the greedy size when the larger one costs more per row', () => {
    const cost = new Map([
      [4, 0.01],
      [8, 0.03],
    ]);
    assert.deepEqual(planBatch([3, 3], sizes, null, { measuredCost: (b) => cost.get(b) }), {
      batchSize: 4,
      count: 1,
      rows: 3,
    });
  });
  test('never chooses on a guess: an unmeasured size is not considered', () => {
    const cost = new Map([[4, 0.01]]);
    assert.deepEqual(planBatch([3, 3], sizes, null, { measuredCost: (b) => cost.get(b) }), {
      batchSize: 4,
      count: 1,
      rows: 3,
    });
  });
  test('one padded B=4 beats three B=1 runs when measured so', () => {
    const cost = new Map([
      [1, 0.01],
      [4, 0.011],
    ]);
    assert.deepEqual(planBatch([1, 1, 1], sizes, null, { measuredCost: (b) => cost.get(b) }), {
      batchSize: 4,
      count: 3,
      rows: 3,
    });
  });
  test('respects the cap', () => {
    const cost = new Map([
      [4, 0.01],
      [8, 0.01],
    ]);
    assert.deepEqual(planBatch([3, 3], sizes, 4, { measuredCost: (b) => cost.get(b) }), {
      batchSize: 4,
      count: 1,
      rows: 3,
    });
  });
});
