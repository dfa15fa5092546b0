import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { ManualClock } from '../../src/scheduler/manual-clock.js';
import type { ModelSchedulingInfo } from '../../src/scheduler/model-info.js';
import { Scheduler } from './named-scheduler.js';
import { FakeExecutor, f32, flush } from './fake-executor.js';

const model = (name: string): ModelSchedulingInfo => ({
  name,
  compiledBatchSizes: [1],
  inputBatchAxes: [0],
  outputBatchAxes: [0],
});
const row = () => [f32('x', [1, 1], [1])];

// What a console showed: a costly model with ~90 % of the device while a cheap one had 12 queued.
// The fair discipline ranks the cheap model first whenever both have work, but the next dispatch
// was chosen (and its weights prepared) as the previous one started: the cheap model's callers
// were then waiting for their answers and its queue was empty, so their next requests queued
// behind a costly dispatch chosen without them (one cheap batch per two costly ones).
suite('fair discipline: the next dispatch is chosen again when the device frees', () => {
  test('a cheap model whose request arrived during a costly dispatch runs next, not the costly one staged before', async () => {
    const clock = new ManualClock(0);
    const exec = new FakeExecutor(clock);
    const sched = new Scheduler({ executor: exec, clock });
    sched.addModel(model('dear'));
    sched.addModel(model('cheap'));
    sched.seedCost('dear', 1, 0.2);
    sched.seedCost('cheap', 1, 0.001);
    // Two requests of the costly model, nothing of the cheap one: the first runs, the second is
    // staged behind it.
    const d1 = sched.submit('dear', row());
    const d2 = sched.submit('dear', row());
    await flush();
    assert.deepEqual(exec.order, ['dear']);
    assert.deepEqual(exec.prepared, ['dear', 'dear'], 'the second dispatch was staged as the first started');
    // The cheap model's caller comes back while the costly dispatch runs.
    clock.advance(10);
    const c1 = sched.submit('cheap', row());
    await flush();
    clock.advance(190);
    exec.calls[0]!.finish();
    await flush();
    assert.deepEqual(exec.order, ['dear', 'cheap'], 'the cheap model, under its share, goes first');
    // The first dispatch's lease, and the staged one that went back unused.
    assert.deepEqual(exec.released, ['dear', 'dear']);
    assert.deepEqual(exec.prepared.slice(0, 3), ['dear', 'dear', 'cheap']);
    exec.calls[1]!.finish();
    await flush();
    assert.deepEqual(exec.order, ['dear', 'cheap', 'dear']);
    exec.calls[2]!.finish();
    await Promise.all([d1, d2, c1]);
  });

  test('a staged choice that is still the best launches as prepared', async () => {
    const clock = new ManualClock(0);
    const exec = new FakeExecutor(clock);
    const sched = new Scheduler({ executor: exec, clock });
    sched.addModel(model('a'));
    const r = [sched.submit('a', row()), sched.submit('a', row())];
    await flush();
    exec.calls[0]!.finish();
    await flush();
    assert.deepEqual(exec.prepared, ['a', 'a'], 'no second prepare for the same choice');
    exec.calls[1]!.finish();
    await Promise.all(r);
  });
});
