/**
 * Every example bundle in examples/models must load. Skipped while that directory is empty
 * (the examples are produced separately); from then on it guards them against format drift.
 */
import { test, suite } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { discoverBundles } from '../../src/bundle/discover.js';

// engine/dist/test/bundle -> repository root
const modelsDir = fileURLToPath(new URL('../../../../examples/models/', import.meta.url));

suite('examples/models', async () => {
  const found = existsSync(modelsDir) ? await discoverBundles(modelsDir) : [];
  if (found.length === 0) {
    test('no example bundles yet', { skip: `no bundles under ${modelsDir}` }, () => {});
    return;
  }
  for (const entry of found) {
    test(`${entry.name} loads`, () => {
      assert.ok(entry.ok, entry.ok ? '' : entry.error.message);
      assert.equal(entry.bundle.name, entry.name);
      if (entry.bundle.kind === 'model') assert.ok(entry.bundle.modules.length > 0);
    });
  }
});
