/**
 * docs/configuration.md is the node.yaml reference; this keeps it complete as keys are added.
 */
import { test, suite } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ENV_OVERRIDES } from '../../src/config/env-overrides.js';
import { SETTINGS_KEYS } from '../../src/config/worker-settings.js';

// engine/dist/test/config -> repository root
const doc = readFileSync(new URL('../../../../docs/configuration.md', import.meta.url), 'utf8');

suite('docs/configuration.md', () => {
  test('documents every environment variable with the key it sets', () => {
    for (const s of ENV_OVERRIDES) {
      const key = s.path.join('.');
      const row = doc.split('\n').find((line) => line.startsWith(`| \`${key}\` `));
      assert.ok(row, `no table row for ${key}`);
      assert.ok(row.includes(`\`${s.variable}\``), `row for ${key} does not name ${s.variable}`);
    }
  });

  test('documents every settings section and the per-model keys', () => {
    for (const key of SETTINGS_KEYS) assert.ok(doc.includes(`global.${key}`), key);
    for (const key of ['weight', 'residency', 'max_batch_size', 'max_queue_delay_us'])
      assert.ok(doc.includes(`| \`${key}\` |`), key);
  });
});
