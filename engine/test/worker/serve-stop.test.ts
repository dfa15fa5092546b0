import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, suite, test } from 'node:test';
import { ServeError } from '@hloserve/common/errors';
import { defaultConfig, workerSettings } from '../../src/config/node-config.js';
import { createLogger } from '../../src/log.js';
import { serve } from '../../src/serve.js';
import { examples } from '../transports/surface.js';
import { inferMlp } from '../control/harness.js';

suite('serve(): stopping', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hloserve-serve-stop-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('a second stop without drain ends a draining stop that waits on a request in a hook', async () => {
    const repo = join(dir, 'models');
    cpSync(join(examples, 'mlp'), join(repo, 'slow'), { recursive: true });
    writeFileSync(
      join(repo, 'slow', 'model.mjs'),
      'export async function preprocess(t) { await new Promise((r) => setTimeout(r, 60_000)); return t; }',
    );
    const base = workerSettings(defaultConfig(repo));
    const settings = {
      ...base,
      cacheDir: join(dir, 'cache'),
      hooks: { ...base.hooks, timeoutMs: 120_000 },
      endpoints: { ...base.endpoints, grpcPort: 0, httpPort: 0, metricsPort: 0, consolePort: -1 },
    };
    const server = await serve(repo, settings, createLogger('silent'));
    const inFlight = inferMlp(server.worker, '', 'slow');
    const failed = inFlight.then(
      () => assert.fail('the request in the hook was answered'),
      (e: unknown) => e,
    );
    await new Promise((r) => setTimeout(r, 300));
    let stopped = false;
    const draining = server.stop(true).then(() => (stopped = true));
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(stopped, false, 'the draining stop waits for the request in the hook');
    assert.match(String(server.worker.stopStage), /model 'slow'/);
    const t = performance.now();
    await server.stop(false);
    await draining;
    assert.ok(performance.now() - t < 10_000, `the second stop took ${performance.now() - t} ms`);
    const e = await failed;
    assert.ok(e instanceof ServeError && e.code === 'HLO_ERR_SHUTTING_DOWN', String(e));
    assert.equal(server.worker.stopStage, null);
  });
});
