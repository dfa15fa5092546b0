import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, suite, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { WireInferRequest } from '@hloserve/common/wire';
import { Runtime } from '@hloserve/native';
import { defaultConfig, workerSettings } from '../../src/config/node-config.js';
import { createLogger } from '../../src/log.js';
import { Worker } from '../../src/worker/worker.js';
import { CompiledModel } from '../../src/model/compiled-model.js';

const examples = resolve(fileURLToPath(import.meta.url), '..', '..', '..', '..', '..', 'examples', 'models');

function request(): WireInferRequest {
  const x = new Float32Array(2 * 784).map((_, i) => Math.sin(i));
  return {
    modelName: 'mlp',
    modelVersion: '',
    id: 'c',
    parameters: {},
    inputs: [
      {
        name: 'x',
        datatype: 'FP32',
        shape: [2, 784],
        parameters: {},
        data: { kind: 'raw', bytes: new Uint8Array(x.buffer) },
      },
    ],
    outputs: [],
  };
}

const ctx = () => ({ deadline: null, signal: new AbortController().signal });

function metric(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  assert.ok(line, `${name} missing`);
  return Number(line.split(' ')[1]);
}

suite('a worker restarted with a warm compile cache compiles nothing', () => {
  let runtime: Runtime;
  let cacheDir: string;
  before(async () => {
    runtime = await Runtime.create();
    cacheDir = await mkdtemp(join(tmpdir(), 'hloserve-wcc-'));
  });
  after(async () => {
    runtime.dispose();
    await rm(cacheDir, { recursive: true, force: true });
  });

  const start = (maxBytes: number) => {
    const settings = workerSettings(defaultConfig(examples));
    return Worker.start({
      modelRepo: examples,
      settings: { ...settings, cacheDir, compileCache: { maxBytes }, modelsInclude: ['mlp'] },
      log: createLogger('silent'),
      runtime,
    });
  };

  test('cold start compiles and stores every module; the warm start loads them all', async () => {
    const cold = await start(256 << 20);
    const modules = cold.modelConfig('mlp', '1').dynamic_batching!.preferred_batch_size!.length;
    let text = await cold.metrics.registry.metrics();
    assert.equal(metric(text, 'hloserve_compile_cache_misses_total'), modules);
    assert.equal(metric(text, 'hloserve_compile_cache_hits_total'), 0);
    assert.ok(metric(text, 'hloserve_compile_cache_bytes') > 0);
    const coldCompiled = cold.registry.get('mlp')!.current!.build.compiled!;
    assert.deepEqual(coldCompiled.warmBeforeServing, coldCompiled.batchSizes, 'compiled now: every size warms first');
    assert.deepEqual(coldCompiled.warmAfterServing, []);
    const coldOut = (await cold.infer(request(), ctx())).outputs[0]!.data!;
    await cold.stop(false);

    const warm = await start(256 << 20);
    text = await warm.metrics.registry.metrics();
    assert.equal(metric(text, 'hloserve_compile_cache_hits_total'), modules);
    assert.equal(metric(text, 'hloserve_compile_cache_misses_total'), 0);
    // Loaded from the cache, each run by the cold start with these types: none runs before serving,
    // and the scheduler starts from the costs the cold start measured.
    const warmCompiled = warm.registry.get('mlp')!.current!.build.compiled!;
    assert.deepEqual(warmCompiled.warmBeforeServing, []);
    assert.deepEqual(warmCompiled.warmAfterServing, warmCompiled.batchSizes);
    assert.deepEqual([...warmCompiled.recordedCosts.keys()], warmCompiled.batchSizes);
    const warmOut = (await warm.infer(request(), ctx())).outputs[0]!.data!;
    assert.ok(Buffer.from(warmOut).equals(Buffer.from(coldOut)));
    await warm.stop(false);

    // Without the run record: one execute (the smallest size) proves them before serving.
    await rm(join(cacheDir, 'executables', 'runs.json'), { force: true });
    const unrecorded = await start(256 << 20);
    const compiled = unrecorded.registry.get('mlp')!.current!.build.compiled!;
    assert.deepEqual(compiled.warmBeforeServing, [compiled.batchSizes[0]]);
    assert.deepEqual(compiled.warmAfterServing, compiled.batchSizes.slice(1));
    assert.equal(compiled.recordedCosts.size, 0);
    await unrecorded.stop(false);
  });

  test('a warm start signals dispatch once, while the models still load, before the set has loaded', async () => {
    const settings = workerSettings(defaultConfig(examples));
    const { worker, loaded, dispatched } = await Worker.begin({
      modelRepo: examples,
      settings: {
        ...settings,
        cacheDir,
        compileCache: { maxBytes: 256 << 20 },
        // A plain model, a model with hooks and a meta model calling it.
        modelsInclude: ['mlp', 'grader', 'two-stage'],
      },
      log: createLogger('silent'),
      runtime,
    });
    let settled = false;
    void loaded.then(() => (settled = true));
    await dispatched;
    // Each load has handed its executables over, and none is serving yet: what serve() does next
    // (listeners, the console) runs while they load.
    assert.equal(settled, false);
    for (const name of ['mlp', 'grader', 'two-stage']) assert.equal(worker.registry.get(name)?.state, 'LOADING', name);
    await loaded;
    for (const name of ['mlp', 'grader', 'two-stage']) assert.equal(worker.registry.get(name)?.state, 'READY', name);
    assert.ok(worker.compileCache!.stats().hits > 0);
    await worker.stop(false);
  });

  test('a warm start warms the sizes left for after serving only once the whole startup set has loaded', async () => {
    const settings = workerSettings(defaultConfig(examples));
    const models = ['grader', 'mlp'];
    let worker: Worker | undefined;
    // Each warmup call: the model, its sizes, and whether every model of the set was READY then.
    const calls: { model: string; sizes: number[]; allReady: boolean }[] = [];
    const warmup = CompiledModel.prototype.warmup;
    CompiledModel.prototype.warmup = function (this: CompiledModel, weights, sizes) {
      const allReady = models.every((m) => worker?.registry.get(m)?.state === 'READY');
      calls.push({ model: this.name, sizes: [...(sizes ?? this.batchSizes)], allReady });
      return warmup.call(this, weights, sizes);
    };
    // Without a run record, so that each model's smallest size runs before it serves.
    await rm(join(cacheDir, 'executables', 'runs.json'), { force: true });
    try {
      const begun = await Worker.begin({
        modelRepo: examples,
        settings: { ...settings, cacheDir, compileCache: { maxBytes: 256 << 20 }, modelsInclude: models },
        log: createLogger('silent'),
        runtime,
      });
      worker = begun.worker;
      await begun.loaded;
      for (let i = 0; i < 500 && calls.length < 2 * models.length; i++) await new Promise((r) => setTimeout(r, 10));
      for (const model of models) {
        const sizes: readonly number[] = begun.worker.registry.get(model)!.current!.batchSizes;
        const mine = calls.filter((c) => c.model === model);
        // Loaded from the cache: the smallest size proves the executables with the weights before
        // the model serves; the rest wait for the other model too.
        assert.deepEqual(
          mine.map((c) => c.sizes),
          [sizes.slice(0, 1), sizes.slice(1)],
          model,
        );
        assert.equal(mine[0]!.allReady, false, `${model}: its first warmup is before it serves`);
        assert.equal(mine[1]!.allReady, true, `${model}: the rest once every model of the set serves`);
      }
      await worker.stop(false);
    } finally {
      CompiledModel.prototype.warmup = warmup;
    }
  });

  test('max_bytes 0 turns the cache off', async () => {
    await rm(join(cacheDir, 'executables'), { recursive: true, force: true });
    const w = await start(0);
    assert.equal(w.compileCache, null);
    assert.equal(metric(await w.metrics.registry.metrics(), 'hloserve_compile_cache_hits_total'), 0);
    assert.equal(existsSync(join(cacheDir, 'executables')), false);
    await w.stop(false);
  });
});
