import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { SERVER_NODE_FLAGS, missingServerNodeFlags } from '../src/node-flags.js';

suite('serving node flags', () => {
  test('all missing from a bare command line', () => {
    assert.deepEqual(missingServerNodeFlags([], ''), [...SERVER_NODE_FLAGS]);
  });

  test('given on the command line or in NODE_OPTIONS, with any value or underscores', () => {
    assert.deepEqual(missingServerNodeFlags(['--max-semi-space-size=8'], ''), []);
    assert.deepEqual(
      missingServerNodeFlags(['--max-semi-space-size=4'], ''),
      [],
      'an operator may choose another size',
    );
    assert.deepEqual(missingServerNodeFlags([], '--enable-source-maps  --max_semi_space_size=16'), []);
    assert.deepEqual(missingServerNodeFlags(['--max-old-space-size=8'], ''), [...SERVER_NODE_FLAGS]);
  });
});
