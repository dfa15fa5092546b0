import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, suite, test } from 'node:test';
import { ServeError } from '@hloserve/common/errors';
import { defaultConfig, workerSettings } from '../../src/config/node-config.js';
import { createLogger } from '../../src/log.js';
import { Worker } from '../../src/worker/worker.js';
import { MLP_MANIFEST, mlpModule, mlpRequest, removeDir, tempDir, writeMlpBundle } from '../bundle/fixtures.js';

// A bundle with one `model.mlir` and no compiled sizes: XLA compiles its static shapes, so it serves
// the batch its main declares. Before, the server took it for "any batch": a module declared for
// batch 4 failed its batch-1 warmup, and one declared for batch 1 answered a 2-row request with an
// internal error from the plugin.
const SINGLE = MLP_MANIFEST.replace('compiled_batch_sizes: [1, 4]', 'compiled_batch_sizes: []');

const request = mlpRequest;

const ctx = () => ({ deadline: null, signal: new AbortController().signal });

/** y = x W + b with the fixture's weights (W[i][j] = (3i + j) / 2, b[j] = 10 + j / 2). */
function expected(rows: number): number[] {
  const out: number[] = [];
  for (let r = 0; r < rows; r++) {
    for (let j = 0; j < 3; j++) {
      let v = 10 + j / 2;
      for (let i = 0; i < 4; i++) v += ((r * 4 + i) / 10) * ((3 * i + j) / 2);
      out.push(v);
    }
  }
  return out;
}

suite('a bundle with a single model.mlir serves the batch its main declares', () => {
  let repo: string;
  let worker: Worker;
  before(async () => {
    repo = await tempDir('hloserve-single-');
    const one = {
      'manifest.yaml': SINGLE.replace('name: mlp', 'name: one'),
      'model.b1.mlir': null,
      'model.b4.mlir': null,
    };
    await writeMlpBundle(repo, 'one', { ...one, 'model.mlir': mlpModule(1) });
    const four = {
      'manifest.yaml': SINGLE.replace('name: mlp', 'name: four'),
      'model.b1.mlir': null,
      'model.b4.mlir': null,
    };
    await writeMlpBundle(repo, 'four', { ...four, 'model.mlir': mlpModule(4) });
    const settings = workerSettings(defaultConfig(repo));
    worker = await Worker.start({
      modelRepo: repo,
      settings: { ...settings, cacheDir: join(repo, '.state') },
      log: createLogger('silent'),
    });
  });
  after(async () => {
    await worker.stop(false);
    await removeDir(repo);
  });

  test('a module declared for batch 4 loads, and serves 1 to 4 rows (padded) with the right values', async () => {
    for (const rows of [1, 3, 4]) {
      const res = await worker.infer(request('four', rows), ctx());
      assert.deepEqual(res.outputs[0]!.shape, [rows, 3]);
      const data = res.outputs[0]!.data;
      assert.ok(data);
      const got = [...new Float32Array(data.slice().buffer)];
      for (const [i, v] of expected(rows).entries()) assert.ok(Math.abs(got[i]! - v) < 1e-3, `${got[i]} vs ${v}`);
    }
  });

  for (const [model, rows, most] of [
    ['four', 5, 4],
    ['one', 2, 1],
  ] as const) {
    test(`${rows} rows to a module declared for batch ${most}: INVALID_ARGUMENT before it queues, not an internal error`, async () => {
      await assert.rejects(worker.infer(request(model, rows), ctx()), (e: unknown) => {
        assert.ok(e instanceof ServeError, String(e));
        assert.equal(e.code, 'HLO_ERR_INVALID_ARGUMENT', e.message);
        assert.match(e.message, new RegExp(`exceeds the largest batch model '${model}' accepts \\(${most}\\)`));
        return true;
      });
      assert.deepEqual((await worker.infer(request(model, most), ctx())).outputs[0]!.shape, [most, 3]);
    });
  }
});
