import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { SERVER_NODE_FLAGS, missingServerNodeFlags } from '../src/node-flags.js';

suite('serving node flags', () => {
  test('the serving one missing from a bare command line; the start-up one is not warned of', () => {
    assert.deepEqual(missingServerNodeFlags([], ''), ['--max-semi-space-size=8']);
    assert.deepEqual(missingServerNodeFlags(['--min-semi-space-size=8'], ''), ['--max-semi-space-size=8']);
    assert.ok(SERVER_NODE_FLAGS.includes('--min-semi-space-size=8'), 'a start is told to begin at 8 MB');
  });

  test('given on the command line or in NODE_OPTIONS, with any value or underscores', () => {
    assert.deepEqual(missingServerNodeFlags(['--max-semi-space-size=8'], ''), []);
    assert.deepEqual(
      missingServerNodeFlags(['--max-semi-space-size=4'], ''),
      [],
      'an operator may choose another size',
    );
    assert.deepEqual(missingServerNodeFlags([], '--enable-source-maps  --max_semi_space_size=16'), []);
    assert.deepEqual(missingServerNodeFlags(['--max-old-space-size=8'], ''), ['--max-semi-space-size=8']);
  });
});
