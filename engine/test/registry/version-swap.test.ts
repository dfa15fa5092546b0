import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import type { CompiledModel } from '../../src/model/compiled-model.js';
import { ModelBuild, ModelVersion } from '../../src/model/model-version.js';
import type { ModelSchedulingInfo } from '../../src/scheduler/model-info.js';
import { Scheduler } from '../../src/scheduler/scheduler.js';
import type { HostTensor } from '../../src/tensor.js';
import { WeightCache } from '../../src/weights/weight-cache.js';
import { PjrtExecutor, type PjrtLease } from '../../src/device/pjrt-executor.js';
import { f32, flush } from '../scheduler/fake-executor.js';

const silent = { warn: () => {} };

/** A stand-in executable that records which weights it ran with, and can be held mid-run. */
function fakeCompiled(label: string, runs: string[][], gate: { open: Promise<void> | null }): CompiledModel {
  return {
    batchSizes: [1, 4],
    run: async (_batch: number, inputs: readonly HostTensor[], weights: unknown) => {
      runs.push([label, String(weights)]);
      if (gate.open !== null) await gate.open;
      return inputs.map((t) => ({ ...t, name: 'y' }));
    },
    dispose: () => runs.push([label, 'disposed']),
  } as unknown as CompiledModel;
}

const info = (): ModelSchedulingInfo => ({
  name: 'm',
  compiledBatchSizes: [1, 4],
  inputBatchAxes: [0],
  outputBatchAxes: [0],
});

suite('a version swap under load', () => {
  test('a request queued before the swap and dispatched after it runs on one consistent (executable, weights) pair', async () => {
    const runs: string[][] = [];
    const cache = new WeightCache<string, string, string>({
      backend: {
        readHost: (_key: string, source: string) => Promise.resolve(source),
        upload: (_key: string, host: string) => Promise.resolve(`device(${host})`),
        free: () => {},
      },
      budgetBytes: Infinity,
      logger: silent,
    });
    const gate: { open: Promise<void> | null } = { open: null };
    let openGate!: () => void;
    gate.open = new Promise((r) => (openGate = r));
    const versionOf = async (gen: number): Promise<ModelVersion> => {
      const key = `m@${gen}`;
      await cache.addModel({ name: key, bytes: 1, source: `weights-v${gen}` });
      const compiled = fakeCompiled(`exe-v${gen}`, runs, gate);
      const build = new ModelBuild(compiled, { key, source: { path: null, argumentOrder: [] }, bytes: 1 }, () => {
        cache.removeModel(key);
        compiled.dispose();
      });
      return new ModelVersion({
        name: 'm',
        generation: gen,
        bundle: {} as never,
        build,
        io: {} as never,
        scheduling: info(),
        policy: { weight: 1, residency: 'system', maxBatchSize: null, maxQueueDelayUs: null },
        signature: '',
      });
    };
    const executor = new PjrtExecutor(cache as never);
    const sched = new Scheduler<PjrtLease, ModelVersion>({ executor, logger: silent });
    const v1 = await versionOf(1);
    const queue = sched.addModel(info(), v1);
    const row = (v: number) => [f32('x', [1, 2], [v, v])];
    // The first request occupies the device; the second waits in the queue on v1.
    v1.hold();
    const first = sched.submit(queue, row(1), { version: v1 });
    await flush();
    v1.hold();
    const queued = sched.submit(queue, row(2), { version: v1 });
    await flush();
    // The swap: v2 is built beside v1, then replaces it in one step; v1 is retired (freed once drained).
    const v2 = await versionOf(2);
    sched.replaceModel(queue, info(), v2);
    let v1Freed = false;
    const retired = v1.retire().then(() => (v1Freed = true));
    v2.hold();
    const after = sched.submit(queue, row(3), { version: v2 });
    await flush();
    assert.equal(v1Freed, false, 'v1 is still used by the queued request');
    gate.open = null;
    openGate();
    for (const p of [first, queued]) {
      await p;
      v1.release();
    }
    await after;
    v2.release();
    await retired;
    assert.deepEqual(runs, [
      ['exe-v1', 'device(weights-v1)'],
      ['exe-v1', 'device(weights-v1)'],
      ['exe-v1', 'disposed'],
      ['exe-v2', 'device(weights-v2)'],
    ]);
    assert.equal(cache.has('m@1'), false, "v1's weights left the cache once it drained");
    assert.equal(cache.has('m@2'), true);
    assert.ok(v1.build.freed);
    assert.ok(!v2.build.freed);
  });
});
