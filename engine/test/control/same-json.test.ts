import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sameJson } from '../../src/control/feed/same-json.js';

test('sameJson: equal as their JSON is equal', () => {
  const entry = () => ({
    name: 'm',
    state: 'READY',
    reason: null,
    batchSizes: [1, 4, 8],
    policy: { residency: 'system', weight: 1, maxBatchSize: null, maxQueueDelayUs: 100 },
    drain: null,
  });
  assert.equal(sameJson(entry(), entry()), true);
  assert.equal(sameJson({ a: 1, b: 2 }, { b: 2, a: 1 }), true, 'key order does not matter');
  assert.equal(sameJson({ a: 1, b: undefined }, { a: 1 }), true, 'an undefined key is not sent');
  assert.equal(sameJson(Number.NaN, Number.NaN), true);
  for (const [a, b] of [
    [entry(), { ...entry(), batchSizes: [1, 4] }],
    [entry(), { ...entry(), policy: { ...entry().policy, weight: 2 } }],
    [entry(), { ...entry(), drain: { since: 1 } }],
    [{ a: 1 }, { a: 1, b: 2 }],
    [{ a: 1, b: 2 }, { a: 1 }],
    [[1, 2], { 0: 1, 1: 2 }],
    [{ 0: 1, 1: 2 }, [1, 2]],
    [null, {}],
    [0, '0'],
    [[], [undefined]],
    [{ a: null }, { a: undefined }],
  ] as const)
    assert.equal(sameJson(a, b), false, `${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
});
