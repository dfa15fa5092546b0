import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer } from '../src/server-process.js';

// Installed software (the plugin, $HLOSERVE_PLUGIN_DIR) and state ($HLOSERVE_CACHE_DIR) are
// separate settings: a server pointed at a brand-new state directory still finds its plugin.
test('a server with a fresh, empty state directory starts and serves', async () => {
  const state = mkdtempSync(join(tmpdir(), 'hloserve-state-'));
  const server = await startServer({ HLOSERVE_CACHE_DIR: state });
  try {
    const res = await fetch(`http://${server.httpUrl()}/v2/health/ready`);
    assert.equal(res.status, 200);
    assert.ok(!server.logs.some((l) => /PJRT plugin not found/.test(l)), server.logs.join('\n'));
  } finally {
    await server.stop();
    rmSync(state, { recursive: true, force: true });
  }
});
