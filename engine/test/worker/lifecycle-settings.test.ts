import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { suite, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { defaultConfig, workerSettings } from '../../src/config/node-config.js';
import { createLogger } from '../../src/log.js';
import { Worker } from '../../src/worker/worker.js';

const examples = resolve(fileURLToPath(import.meta.url), '..', '..', '..', '..', '..', 'examples', 'models');

/** A dynamic-mode worker on an empty repository that only file events (never the poll) wake. */
async function dynamicWorker(modelSettleSeconds: number): Promise<{ worker: Worker; repo: string }> {
  const repo = mkdtempSync(join(tmpdir(), 'hlo-settle-'));
  const base = workerSettings(defaultConfig(repo));
  const worker = await Worker.start({
    modelRepo: repo,
    settings: {
      ...base,
      modelControlMode: 'dynamic',
      modelPollSeconds: 86400,
      modelSettleSeconds,
      endpoints: { ...base.endpoints, host: '127.0.0.1', grpcPort: 0, httpPort: 0, metricsPort: -1, consolePort: -1 },
    },
    log: createLogger('silent'),
  });
  return { worker, repo };
}

const seen = (w: Worker) => w.repositoryIndex(false).some((m) => m.name === 'mlp');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

suite('node.yaml: model_settle_seconds', () => {
  test('dynamic mode waits model_settle_seconds after a file event before it looks', async () => {
    const { worker, repo } = await dynamicWorker(60);
    try {
      cpSync(join(examples, 'mlp'), join(repo, 'mlp'), { recursive: true });
      // With the default quarter second the load would have started long before this.
      await sleep(2000);
      assert.equal(seen(worker), false, 'the watcher looked before the settle time was up');
    } finally {
      await worker.stop(false);
      rmSync(repo, { recursive: true, force: true });
    }
  });

  test('a short settle time acts on the event within a few looks', async () => {
    const { worker, repo } = await dynamicWorker(0.05);
    try {
      cpSync(join(examples, 'mlp'), join(repo, 'mlp'), { recursive: true });
      const until = Date.now() + 30_000;
      while (!seen(worker) && Date.now() < until) await sleep(20);
      assert.equal(seen(worker), true, 'the bundle was not picked up from its file events');
    } finally {
      await worker.stop(false);
      rmSync(repo, { recursive: true, force: true });
    }
  });
});

suite('startup: listeners may open while the repository loads', () => {
  test('Worker.begin returns before the startup set has loaded; not ready until it has', async () => {
    const repo = mkdtempSync(join(tmpdir(), 'hlo-begin-'));
    cpSync(join(examples, 'mlp'), join(repo, 'mlp'), { recursive: true });
    const base = workerSettings(defaultConfig(repo));
    const { worker, loaded } = await Worker.begin({
      modelRepo: repo,
      settings: { ...base, endpoints: { ...base.endpoints, metricsPort: -1, consolePort: -1 } },
      log: createLogger('silent'),
    });
    try {
      assert.equal(worker.serverReady(), false);
      await loaded;
      assert.equal(worker.serverReady(), true);
      assert.deepEqual(
        worker.repositoryIndex(true).map((m) => m.name),
        ['mlp'],
      );
    } finally {
      await worker.stop(false);
      rmSync(repo, { recursive: true, force: true });
    }
  });
});
