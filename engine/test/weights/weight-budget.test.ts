import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { weightBudget } from '../../src/weights/weight-budget.js';

suite('weightBudget (reference §2.8 vectors; arena 1000, wiggle 0.1)', () => {
  test('fraction 1, no scratch, nothing pinned -> 900 / 900', () => {
    assert.deepEqual(weightBudget(1000, 1, 0.1, 0, 0), { weightPool: 900, onDemand: 900, pinnedOverCommit: false });
  });
  test('fraction 0.5 -> 500', () => {
    assert.deepEqual(weightBudget(1000, 0.5, 0.1, 0, 0), { weightPool: 500, onDemand: 500, pinnedOverCommit: false });
  });
  test('scratch 300 -> 600', () => {
    assert.deepEqual(weightBudget(1000, 1, 0.1, 300, 0), { weightPool: 600, onDemand: 600, pinnedOverCommit: false });
  });
  test('scratch 300 + pinned 200 -> on-demand 400', () => {
    assert.deepEqual(weightBudget(1000, 1, 0.1, 300, 200), { weightPool: 600, onDemand: 400, pinnedOverCommit: false });
  });
  test('pinned 700 over a 600 pool -> on-demand 0 and overcommit', () => {
    assert.deepEqual(weightBudget(1000, 1, 0.1, 300, 700), { weightPool: 600, onDemand: 0, pinnedOverCommit: true });
  });
  test('scratch 950 -> 0', () => {
    assert.deepEqual(weightBudget(1000, 1, 0.1, 950, 0), { weightPool: 0, onDemand: 0, pinnedOverCommit: false });
  });
  test('arena 0 -> 0', () => {
    assert.deepEqual(weightBudget(0, 1, 0.1, 0, 0), { weightPool: 0, onDemand: 0, pinnedOverCommit: false });
  });
});
