import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before, suite, test } from 'node:test';
import { adminToken, mint, startControl, startMlpWorker, tempDir, type Harness } from '../control/harness.js';
import type { Worker } from '../../src/worker/worker.js';
import { controlOperations, controlRestTarget, feedTarget, type ControlCredentials } from './control-surfaces.js';
import { expectNoFindings, type Target } from './surfaces.js';

// A short, seeded run for npm test; bench/fuzz.mjs --control runs the same targets for longer.
const SEED = 23;

const check = <T>(target: Target<T>, count: number): Promise<void> => expectNoFindings(target, count, SEED);

suite('fuzz: the control API and the live feed answer in the catalogue and keep serving', () => {
  let worker: Worker;
  let h: Harness;
  let dir: string;
  let creds: ControlCredentials;
  before(async () => {
    dir = tempDir();
    worker = await startMlpWorker();
    h = await startControl(worker, dir);
    await h.control.app.listen({ host: '127.0.0.1', port: 0 });
    const admin = await adminToken(h);
    creds = { admin, viewer: (await mint(h, admin, 'viewer')).token };
  });
  after(async () => {
    await h?.close();
    await worker?.stop(false);
    rmSync(dir, { recursive: true, force: true });
  });

  test('every REST operation the OpenAPI document lists, shaped by its schema', async () => {
    const ops = await controlOperations(h);
    assert.ok(ops.length >= 30, `${ops.length} operations`);
    await check(controlRestTarget(h, ops, creds), 600);
  });

  test('WebSocket /api/v1/stream sessions of malformed and out-of-order messages', async () => {
    const port = (h.control.app.server.address() as { port: number }).port;
    await check(feedTarget(`ws://127.0.0.1:${port}/api/v1/stream`, creds), 80);
  });
});
