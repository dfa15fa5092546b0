import assert from 'node:assert/strict';
import { mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, suite, test } from 'node:test';
import { defaultConfig, workerSettings } from '@hloserve/engine/config/node-config';
import { createLogger } from '@hloserve/engine/log';
import { type RunningServer, serve } from '@hloserve/engine/serve';
import { Fp32Client } from '../src/grpc-infer.js';
import { TAG_WIDTH, writeTaggedBundle } from '../src/tagged-bundle.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor(what: string, pred: () => boolean, timeoutMs = 60_000, context = () => ''): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}${context()}`);
    await sleep(10);
  }
}

suite('hot reload in dynamic mode, under load', () => {
  let repo: string;
  let server: RunningServer;
  let client: Fp32Client;
  before(async () => {
    repo = mkdtempSync(join(tmpdir(), 'hlo-reload-'));
    writeTaggedBundle(repo, 'a', 1000);
    writeTaggedBundle(repo, 'b', 1);
    const base = workerSettings(defaultConfig(repo));
    server = await serve(
      repo,
      {
        ...base,
        modelControlMode: 'dynamic',
        modelPollSeconds: 1,
        endpoints: { ...base.endpoints, host: '127.0.0.1', grpcPort: 0, httpPort: 0, metricsPort: -1, consolePort: -1 },
      },
      createLogger('silent'),
    );
    client = new Fp32Client(`127.0.0.1:${server.ports.grpc}`);
  });
  after(async () => {
    client.close();
    await server.stop(false);
    rmSync(repo, { recursive: true, force: true });
  });

  const compiles = async (model: string): Promise<number> =>
    (await server.worker.metrics.compiles.get()).values.find((v) => v.labels.model === model)?.value ?? 0;

  test('B replaced in place 20 times (once broken) while A and B are called: nothing fails, every answer is one version', async () => {
    const worker = server.worker;
    const zeros = new Float32Array(TAG_WIDTH);
    let stop = false;
    const failures: string[] = [];
    const caller = async (model: string): Promise<number[]> => {
      const seen: number[] = [];
      while (!stop) {
        try {
          const y = await client.infer(model, 'x', [1, TAG_WIDTH], zeros);
          // Every element comes from the same weights: one version computed the whole answer.
          if (!y.every((v) => v === y[0])) failures.push(`${model}: mixed answer ${[...y].join(',')}`);
          seen.push(y[0]!);
        } catch (err) {
          failures.push(`${model}: ${(err as Error).message}`);
        }
      }
      return seen;
    };
    const callers = [caller('a'), caller('a'), caller('b'), caller('b'), caller('b')];
    await sleep(100);
    const broken = 11;
    for (let v = 2; v <= 21; v++) {
      const seq = worker.events.lastSeq;
      writeTaggedBundle(repo, 'b', v, v === broken);
      const want = v === broken ? 'failed' : 'reloaded';
      await waitFor(`b version ${v} to be ${want}`, () =>
        worker.events.since(seq).some((e) => e.model === 'b' && e.type === want),
      );
      if (v === broken) {
        const entry = worker.repositoryIndex(false).find((m) => m.name === 'b')!;
        assert.equal(entry.state, 'READY');
        assert.match(entry.reason, /reload failed, version \d+ still serving/);
        assert.deepEqual([...(await client.infer('b', 'x', [1, TAG_WIDTH], zeros))], Array(TAG_WIDTH).fill(v - 1));
      } else {
        // Admitted after the swap: the new version answers.
        assert.deepEqual([...(await client.infer('b', 'x', [1, TAG_WIDTH], zeros))], Array(TAG_WIDTH).fill(v));
      }
    }
    stop = true;
    const [a1, a2, ...bs] = await Promise.all(callers);
    assert.deepEqual(failures, []);
    for (const seen of [a1!, a2!]) assert.ok(seen.length > 0 && seen.every((t) => t === 1000));
    for (const seen of bs) {
      assert.ok(seen.length > 0);
      assert.ok(!seen.includes(broken), 'the broken version never serves');
      // One caller's requests are admitted one after another: the version never goes back.
      for (let i = 1; i < seen.length; i++) assert.ok(seen[i]! >= seen[i - 1]!, `${seen[i - 1]} then ${seen[i]}`);
      assert.ok(seen.every((t) => t >= 1 && t <= 21));
    }
    assert.ok(new Set(bs.flat()).size >= 10, 'the callers saw the versions change under them');
    assert.equal(
      worker.repositoryIndex(false).find((m) => m.name === 'b')!.reason,
      '',
      'a good version clears the reason',
    );
  });

  test('a renamed directory moves the model in place without compiling; a removed one unloads', async () => {
    const worker = server.worker;
    const before = await compiles('b');
    const seq = worker.events.lastSeq;
    renameSync(join(repo, 'b'), join(repo, 'c'));
    await waitFor(
      'the rename',
      () => worker.events.since(seq).some((e) => e.type === 'renamed'),
      60_000,
      () => `; events since: ${JSON.stringify(worker.events.since(seq - 6))}`,
    );
    const renamed = worker.events.since(seq).find((e) => e.type === 'renamed')!;
    assert.deepEqual([renamed.model, renamed.type === 'renamed' && renamed.from], ['c', 'b']);
    assert.equal(await compiles('b'), before);
    assert.equal(await compiles('c'), 0, 'nothing compiled for the new name');
    assert.deepEqual(
      [...(await client.infer('c', 'x', [1, TAG_WIDTH], new Float32Array(TAG_WIDTH)))],
      [21, 21, 21, 21],
    );
    await assert.rejects(client.infer('b', 'x', [1, TAG_WIDTH], new Float32Array(TAG_WIDTH)), /NOT_FOUND|not found/i);
    const seq2 = worker.events.lastSeq;
    rmSync(join(repo, 'c'), { recursive: true });
    await waitFor('the unload', () => worker.events.since(seq2).some((e) => e.type === 'unloaded' && e.model === 'c'));
    assert.deepEqual(
      worker.repositoryIndex(false).map((m) => m.name),
      ['a'],
    );
  });
});
