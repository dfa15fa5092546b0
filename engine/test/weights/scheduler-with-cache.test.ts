/**
 * The scheduler wired to the weight cache the way the worker wires them (prepare = acquire),
 * with a stand-in device: cold loads overlap the running execution when they fit, and wait for
 * it when they would need its weights evicted.
 */
import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import type { ExecutionRequest, Executor } from '../../src/scheduler/executor.js';
import { ManualClock } from '../../src/scheduler/manual-clock.js';
import { Scheduler } from '../../src/scheduler/scheduler.js';
import type { HostTensor } from '../../src/tensor.js';
import type { WeightBackend } from '../../src/weights/weight-backend.js';
import { WeightCache, type WeightLease } from '../../src/weights/weight-cache.js';
import { deferred, doubled, f32, flush, type Deferred } from '../scheduler/fake-executor.js';

type Lease = WeightLease<string>;

class Device implements Executor<Lease>, WeightBackend<string, string> {
  readonly log: string[] = [];
  readonly running: Deferred<void>[] = [];
  constructor(readonly cache: () => WeightCache<string, string>) {}
  readHost(model: string): Promise<string> {
    return Promise.resolve(`host:${model}`);
  }
  upload(model: string): Promise<string> {
    this.log.push(`upload ${model}`);
    return Promise.resolve(`dev:${model}`);
  }
  free(model: string): void {
    this.log.push(`free ${model}`);
  }
  prepare(model: string): Promise<Lease> {
    return this.cache().acquire(model);
  }
  async execute(req: ExecutionRequest<Lease>): Promise<readonly HostTensor[]> {
    assert.equal(req.lease.weights, `dev:${req.model}`, 'the execution reads its own weights');
    this.log.push(`run ${req.model}`);
    const done = deferred<void>();
    this.running.push(done);
    await done.promise;
    this.log.push(`done ${req.model}`);
    return doubled(req.inputs);
  }
}

const info = (name: string) => ({ name, compiledBatchSizes: [1], inputBatchAxes: [0], outputBatchAxes: [0] });
const x = () => [f32('x', [1, 1], [1])];

suite('Scheduler + WeightCache', () => {
  test('a cold model that fits is uploaded while another executes', async () => {
    const clock = new ManualClock();
    const device: Device = new Device(() => cache);
    const cache = new WeightCache<string, string>({ backend: device, budgetBytes: 200, clock });
    const sched = new Scheduler<Lease>({ executor: device, clock });
    for (const m of ['a', 'b']) {
      await cache.addModel({ name: m, bytes: 100 });
      sched.addModel(info(m));
    }
    const ra = sched.submit('a', x());
    await flush();
    const rb = sched.submit('b', x());
    await flush();
    assert.deepEqual(device.log, ['upload a', 'run a', 'upload b']);
    device.running[0]!.resolve();
    await flush();
    device.running[1]!.resolve();
    await Promise.all([ra, rb]);
    assert.deepEqual(device.log, ['upload a', 'run a', 'upload b', 'done a', 'run b', 'done b']);
  });

  test('a cold model that needs the running model evicted waits for it to finish', async () => {
    const clock = new ManualClock();
    const device: Device = new Device(() => cache);
    const cache = new WeightCache<string, string>({ backend: device, budgetBytes: 100, clock });
    const sched = new Scheduler<Lease>({ executor: device, clock });
    for (const m of ['a', 'b']) {
      await cache.addModel({ name: m, bytes: 100 });
      sched.addModel(info(m));
    }
    const ra = sched.submit('a', x());
    await flush();
    const rb = sched.submit('b', x());
    await flush();
    assert.deepEqual(device.log, ['upload a', 'run a']);
    device.running[0]!.resolve();
    await flush();
    assert.deepEqual(device.log, ['upload a', 'run a', 'done a', 'free a', 'upload b', 'run b']);
    device.running[1]!.resolve();
    await Promise.all([ra, rb]);
    assert.equal(cache.stats().loads, 2);
    assert.equal(cache.modelStats('b')!.leases, 0);
  });
});
