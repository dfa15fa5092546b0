import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { after, before, suite, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { defaultConfig, workerSettings } from '../../src/config/node-config.js';
import type { WireInferRequest } from '@hloserve/common/wire';
import { ServeError } from '@hloserve/common/errors';
import { createLogger } from '../../src/log.js';
import { Worker } from '../../src/worker/worker.js';

const examples = resolve(fileURLToPath(import.meta.url), '..', '..', '..', '..', '..', 'examples', 'models');

function mlpRequest(rows = 1): WireInferRequest {
  const x = new Float32Array(rows * 784).fill(0.25);
  return {
    modelName: 'mlp',
    modelVersion: '',
    id: 'r1',
    parameters: {},
    inputs: [
      {
        name: 'x',
        datatype: 'FP32',
        shape: [rows, 784],
        parameters: {},
        data: { kind: 'raw', bytes: new Uint8Array(x.buffer) },
      },
    ],
    outputs: [],
  };
}

const ctx = () => ({ deadline: null, signal: new AbortController().signal });
const code = (c: string) => (e: unknown) => e instanceof ServeError && e.code === c;

suite('worker lifecycle on the real CPU plugin', () => {
  let worker: Worker;
  before(async () => {
    const config = defaultConfig(examples);
    const settings = workerSettings(config);
    worker = await Worker.start({
      modelRepo: examples,
      settings: { ...settings, modelsInclude: ['mlp'], modelControlMode: 'explicit' },
      log: createLogger('silent'),
    });
  });
  after(() => worker.stop(false));

  test('an unknown model name of any length is NOT_FOUND with a short quote of it', async () => {
    const name = 'x'.repeat(100_000);
    await assert.rejects(worker.infer({ ...mlpRequest(), modelName: name }, ctx()), (e: unknown) => {
      assert.ok(code('HLO_ERR_MODEL_NOT_FOUND')(e));
      assert.ok((e as Error).message.length < 200, `${(e as Error).message.length} chars`);
      assert.match((e as Error).message, /\(100000 chars\)/);
      return true;
    });
  });

  test('serves, reports metadata and a Triton config with the compiled sizes', async () => {
    const res = await worker.infer(mlpRequest(3), ctx());
    assert.equal(res.id, 'r1');
    assert.deepEqual(res.outputs[0]!.shape, [3, 10]);
    assert.equal(res.outputs[0]!.data!.byteLength, 3 * 10 * 4);
    assert.deepEqual(worker.modelMetadata('mlp', '').inputs, [{ name: 'x', datatype: 'FP32', shape: [-1, 784] }]);
    const cfg = worker.modelConfig('mlp', '1');
    assert.equal(cfg.max_batch_size, 32);
    assert.deepEqual(cfg.input[0]!.dims, [784]);
    assert.deepEqual(cfg.dynamic_batching!.preferred_batch_size, [1, 4, 8, 16, 32]);
    assert.equal(worker.modelStatistics('mlp', '')[0]!.inference_count >= 3, true);
  });

  test('statistics: last_inference in epoch ms; input, queue, infer and output add up to the total', async () => {
    const before = Date.now();
    await Promise.all([worker.infer(mlpRequest(2), ctx()), worker.infer(mlpRequest(1), ctx())]);
    const after = Date.now();
    const s = worker.modelStatistics('mlp', '')[0]!;
    assert.ok(s.last_inference >= before - 1 && s.last_inference <= after + 1, `${s.last_inference}`);
    const st = s.inference_stats;
    const parts = [st.compute_input, st.queue, st.compute_infer, st.compute_output];
    for (const p of parts) assert.equal(p.count, st.success.count);
    // The phases are read off one clock, each ending where the next starts (every value is rounded
    // to a nanosecond on its own, hence the slack).
    const sum = parts.reduce((a, p) => a + p.ns, 0);
    assert.ok(Math.abs(sum - st.success.ns) <= 5 * st.success.count, `${sum} vs ${st.success.ns}`);
  });

  test('unload answers NOT_FOUND afterwards; load brings it back; a reload keeps serving', async () => {
    await worker.unloadModel('mlp');
    await assert.rejects(worker.infer(mlpRequest(), ctx()), code('HLO_ERR_MODEL_NOT_FOUND'));
    assert.equal(worker.modelReady('mlp', ''), false);
    await worker.loadModel('mlp');
    assert.equal((await worker.infer(mlpRequest(), ctx())).outputs.length, 1);
    const during = worker.infer(mlpRequest(2), ctx());
    await Promise.all([worker.loadModel('mlp'), worker.loadModel('mlp')]);
    assert.equal((await during).outputs[0]!.shape[0], 2);
    assert.equal((await worker.infer(mlpRequest(), ctx())).outputs.length, 1);
    assert.deepEqual(
      worker.repositoryIndex(true).map((m) => m.name),
      ['mlp'],
    );
  });

  test('BAD CALL - unknown, malformed and oversized requests', async () => {
    await assert.rejects(worker.loadModel('no-such-model'), code('HLO_ERR_MODEL_NOT_FOUND'));
    await assert.rejects(worker.loadModel('../etc'), code('HLO_ERR_INVALID_ARGUMENT'));
    await assert.rejects(worker.infer({ ...mlpRequest(), modelName: '' }, ctx()), code('HLO_ERR_INVALID_ARGUMENT'));
    await assert.rejects(worker.infer(mlpRequest(33), ctx()), code('HLO_ERR_INVALID_ARGUMENT'));
    await assert.rejects(
      worker.infer(mlpRequest(), { deadline: 1, signal: new AbortController().signal }),
      code('HLO_ERR_DEADLINE_EXCEEDED'),
    );
    assert.equal((await worker.infer(mlpRequest(), ctx())).outputs.length, 1);
  });
});

suite('worker with a weight budget on the CPU plugin: the device arena', () => {
  function resnetRequest(): WireInferRequest {
    const x = Float32Array.from({ length: 32 * 32 * 3 }, (_, i) => Math.sin(i));
    return {
      modelName: 'resnet',
      modelVersion: '',
      id: '',
      parameters: {},
      inputs: [
        {
          name: 'image',
          datatype: 'FP32',
          shape: [1, 32, 32, 3],
          parameters: {},
          data: { kind: 'raw', bytes: new Uint8Array(x.buffer) },
        },
      ],
      outputs: [],
    };
  }
  const start = (deviceArena: boolean, weightCacheBytes: number | null, models = ['mlp', 'resnet']) => {
    const settings = workerSettings(defaultConfig(examples));
    return Worker.start({
      modelRepo: examples,
      settings: {
        ...settings,
        modelsInclude: models,
        runtime: { ...settings.runtime, deviceArena, weightCacheBytes },
      },
      log: createLogger('silent'),
    });
  };
  const bytesOf = (out: { outputs: readonly { data?: Uint8Array | null }[] }) => Buffer.from(out.outputs[0]!.data!);

  test('models that evict each other answer exactly as when all are resident; the arena shows in /metrics', async () => {
    const resident = await start(true, null);
    const want = {
      mlp: bytesOf(await resident.infer(mlpRequest(2), ctx())),
      resnet: bytesOf(await resident.infer(resnetRequest(), ctx())),
    };
    resident.refreshGauges();
    assert.doesNotMatch(
      await resident.metrics.registry.metrics(),
      /hloserve_device_arena_bytes\{/,
      'no budget, no arena',
    );
    await resident.stop(false);
    // A budget of about one model: every call to the other model evicts.
    const w = await start(true, 5_000_000);
    for (let i = 0; i < 6; i++) {
      assert.deepEqual(bytesOf(await w.infer(mlpRequest(2), ctx())), want.mlp);
      assert.deepEqual(bytesOf(await w.infer(resnetRequest(), ctx())), want.resnet);
    }
    const s = w.cache.stats();
    assert.ok(s.evictions >= 10, `evictions ${s.evictions}`);
    w.refreshGauges();
    const text = await w.metrics.registry.metrics();
    const used = Number(/hloserve_device_arena_bytes\{state="used"\} (\d+)/.exec(text)?.[1]);
    const limit = Number(/hloserve_device_arena_bytes\{state="limit"\} (\d+)/.exec(text)?.[1]);
    assert.ok(used > 0 && used <= limit, `used ${used} of ${limit}`);
    await w.stop(false);
    w.refreshGauges(); // a scrape during shutdown finds the arena gone and skips it
    const off = await start(false, 1_000_000, ['mlp']);
    assert.deepEqual(bytesOf(await off.infer(mlpRequest(2), ctx())), want.mlp);
    off.refreshGauges();
    assert.doesNotMatch(await off.metrics.registry.metrics(), /hloserve_device_arena_bytes\{/);
    await off.stop(false);
  });
});

suite('queue gauges at scrape time', () => {
  test('a request waiting in the batching window shows in hloserve_queue_depth and nv_inference_pending_request_count', async () => {
    const settings = workerSettings(defaultConfig(examples));
    const w = await Worker.start({
      modelRepo: examples,
      // A 1.5 s window: a lone request waits in the queue for company.
      settings: {
        ...settings,
        modelsInclude: ['mlp'],
        scheduler: { ...settings.scheduler, maxQueueDelayUs: 1_500_000 },
      },
      log: createLogger('silent'),
    });
    try {
      const pendingLine = /nv_inference_pending_request_count\{model="mlp",version="1"\} (\d+)/;
      const answer = w.infer(mlpRequest(1), ctx());
      await new Promise((r) => setTimeout(r, 100));
      w.refreshGauges();
      const during = await w.metrics.registry.metrics();
      assert.equal(pendingLine.exec(during)?.[1], '1', 'one request pending');
      assert.match(during, /hloserve_queue_depth\{model="mlp"\} 1/);
      await answer;
      w.refreshGauges();
      assert.equal(pendingLine.exec(await w.metrics.registry.metrics())?.[1], '0', 'none pending once answered');
    } finally {
      await w.stop(false);
    }
  });
});
