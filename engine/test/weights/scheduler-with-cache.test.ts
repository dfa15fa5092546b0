/**
 * The scheduler wired to the weight cache the way the worker wires them (prepare = acquire),
 * with a stand-in device: cold loads overlap the running execution when they fit, and wait for
 * it when they would need its weights evicted.
 */
import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import type { ExecutionRequest, Executor } from '../../src/scheduler/executor.js';
import { ManualClock } from '../../src/scheduler/manual-clock.js';
import { Scheduler } from '../scheduler/named-scheduler.js';
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
  isReady(model: string): boolean {
    return this.cache().isResident(model);
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

  /** a, b and c of 100 bytes under a 200-byte budget; a and b resident, a executing. */
  async function holdSetup(options: { coldHoldMs: number; discipline?: 'fifo' | 'edf' | 'fair'; gapMs: number }) {
    const clock = new ManualClock();
    const device: Device = new Device(() => cache);
    const cache = new WeightCache<string, string>({ backend: device, budgetBytes: 200, clock });
    const sched = new Scheduler<Lease>({
      executor: device,
      clock,
      discipline: options.discipline ?? 'fifo',
      coldHoldMs: options.coldHoldMs,
    });
    for (const m of ['a', 'b', 'c']) {
      await cache.addModel({ name: m, bytes: 100 });
      sched.addModel(info(m));
    }
    for (const m of ['b', 'a']) {
      const r = sched.submit(m, x());
      await flush();
      device.running.shift()!.resolve();
      await r;
    }
    device.log.length = 0;
    const ra = sched.submit('a', x());
    await flush();
    // c arrives first, b (resident) gapMs later, both while a executes.
    const rc = sched.submit('c', x());
    clock.advance(options.gapMs);
    const rb = sched.submit('b', x());
    await flush();
    const finishAll = async (): Promise<void> => {
      for (let i = 0; i < 3; i++) {
        await flush();
        device.running.shift()!.resolve();
      }
      await Promise.all([ra, rb, rc]);
    };
    return { device, cache, finishAll };
  }

  test('cold hold: a resident model is served before an older cold one, and the cold one still runs', async () => {
    const { device, cache, finishAll } = await holdSetup({ coldHoldMs: 5, gapMs: 1 });
    await finishAll();
    assert.deepEqual(device.log, ['run a', 'done a', 'run b', 'free a', 'upload c', 'done b', 'run c', 'done c']);
    assert.equal(cache.stats().loads, 3, 'a and b warm-up, then c: nothing reloaded');
  });

  test('cold hold off: the older cold model goes first and evicts the idle resident one', async () => {
    const { device, cache, finishAll } = await holdSetup({ coldHoldMs: 0, gapMs: 1 });
    await finishAll();
    assert.deepEqual(device.log.slice(0, 5), ['run a', 'free b', 'upload c', 'done a', 'run c']);
    assert.equal(cache.stats().loads, 4, 'b had to be reloaded');
  });

  test('cold hold is bounded: past the hold the cold model goes first', async () => {
    const { device, finishAll } = await holdSetup({ coldHoldMs: 5, gapMs: 6 });
    await finishAll();
    assert.deepEqual(device.log.slice(0, 5), ['run a', 'free b', 'upload c', 'done a', 'run c']);
  });

  test('cold hold never reorders edf', async () => {
    const { device, finishAll } = await holdSetup({ coldHoldMs: 5, gapMs: 1, discipline: 'edf' });
    await finishAll();
    assert.deepEqual(device.log.slice(0, 5), ['run a', 'free b', 'upload c', 'done a', 'run c']);
  });
});
