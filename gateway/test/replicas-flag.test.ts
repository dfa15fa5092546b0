import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { parseReplicas } from '@hloserve/gateway/placement/replicas-flag';

suite('--replicas', () => {
  test('parses counts and all', () => {
    assert.deepEqual(
      [...parseReplicas('mlp=2,resnet=all')],
      [
        ['mlp', 2],
        ['resnet', Infinity],
      ],
    );
    assert.equal(parseReplicas(undefined).size, 0);
    assert.equal(parseReplicas('').size, 0);
  });

  test('refuses a count under one, a missing count and a missing name, naming the part', () => {
    assert.throws(() => parseReplicas('mlp=0'), /--replicas expects .* got 'mlp=0'/);
    assert.throws(() => parseReplicas('mlp'), /got 'mlp'/);
    assert.throws(() => parseReplicas('=2'), /got '=2'/);
    assert.throws(() => parseReplicas('mlp=two'), /got 'mlp=two'/);
  });
});
