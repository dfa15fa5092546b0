/** GET /settings reports the state store's health: where it is, that it answers, and its migrations. */
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, suite, test } from 'node:test';
import type { Worker } from '../../src/worker/worker.js';
import { adminToken, mint, startControl, startMlpWorker, tempDir, type Harness } from './harness.js';

const journal = JSON.parse(
  readFileSync(
    join(import.meta.dirname, '..', '..', '..', 'src', 'state', 'migrations', 'sqlite', 'meta', '_journal.json'),
    'utf8',
  ),
) as { entries: { tag: string }[] };

suite('settings: the state store health', () => {
  const dir = tempDir();
  let worker: Worker;
  let h: Harness;
  let viewer: string;
  let admin: string;
  const get = () => h.control.app.inject({ url: '/api/v1/settings', headers: { authorization: `Bearer ${viewer}` } });
  before(async () => {
    worker = await startMlpWorker();
    h = await startControl(worker, dir);
    admin = await adminToken(h);
    viewer = (await mint(h, admin, 'viewer')).token;
  });
  after(async () => {
    await h.close();
    await worker.stop(false);
    rmSync(dir, { recursive: true, force: true });
  });

  test('a viewer sees the store reachable, its round trip and every shipped migration applied', async () => {
    const res = await get();
    assert.equal(res.statusCode, 200);
    const store = res.json().data.store;
    assert.equal(store.dialect, 'sqlite');
    assert.equal(store.location, join(dir, 'state', 'hloserve.sqlite'));
    assert.equal(store.reachable, true);
    assert.ok(store.latencyMs >= 0 && store.latencyMs < 2000, `latency ${store.latencyMs} ms`);
    assert.deepEqual(store.migrations, {
      applied: journal.entries.length,
      known: journal.entries.length,
      latest: journal.entries.at(-1)!.tag,
    });
    assert.equal(store.error, null);
  });

  test('a settings change answers without the health (its audit record holds no timings)', async () => {
    const res = await h.control.app.inject({
      method: 'PATCH',
      url: '/api/v1/settings',
      headers: { authorization: `Bearer ${admin}` },
      payload: { discipline: 'fair' },
    });
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().data.store, undefined);
  });
});
