import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { ManualClock } from '../../src/scheduler/manual-clock.js';
import type { ModelSchedulingInfo } from '../../src/scheduler/model-info.js';
import { Scheduler } from '../../src/scheduler/scheduler.js';
import { FakeExecutor, f32, flush } from './fake-executor.js';

const info = (name: string): ModelSchedulingInfo => ({
  name,
  compiledBatchSizes: [1],
  inputBatchAxes: [0],
  outputBatchAxes: [0],
});
const row = () => [f32('x', [1, 1], [1])];

// The scheduler keeps no index by name: whoever adds a model keeps its queue (the worker keeps it
// on the registry's slot), so a rename or an unload cannot leave a second map out of step.
suite('a model queue is the handle its owner keeps', () => {
  test('a rename keeps the queued work, counters and recent device time; the old name is nowhere', async () => {
    const clock = new ManualClock(1_000);
    const exec = new FakeExecutor(clock);
    const s = new Scheduler({ executor: exec, clock });
    const a = s.addModel(info('a'));
    const b = s.addModel(info('b'));
    // Both busy, so device time counts toward the fair discipline's recency.
    const first = s.submit(a, row());
    const other = s.submit(b, row());
    await flush();
    const queued = s.submit(a, row());
    await flush();
    exec.calls[0]!.finish();
    await flush();
    s.renameModel(a, { ...info('a2') });
    assert.equal(a.name, 'a2');
    assert.deepEqual(
      s.queues().map((q) => q.name),
      ['a2', 'b'],
    );
    for (const c of exec.calls.slice(1)) c.finish();
    await flush();
    for (const c of exec.calls.slice(2)) c.finish();
    await Promise.all([first, other, queued]);
    const st = s.stats(a)!;
    assert.equal(st.model, 'a2');
    assert.equal(st.requestsServed, 2, 'served before and after the rename, one count');
    assert.equal(
      s.allStats().find((x) => x.model === 'a'),
      undefined,
    );
  });

  test('a removed queue refuses new work NOT_FOUND by its name and reports nothing', async () => {
    const exec = new FakeExecutor();
    const s = new Scheduler({ executor: exec });
    const q = s.addModel(info('m'));
    assert.equal(s.removeModel(q), true);
    assert.equal(s.removeModel(q), false);
    await assert.rejects(s.submit(q, row()), (e: Error & { code?: string }) => {
      assert.equal(e.code, 'HLO_ERR_MODEL_NOT_FOUND');
      assert.match(e.message, /'m'/);
      return true;
    });
    await assert.rejects(s.submit(null, row()), /unknown model/);
    assert.equal(s.stats(q), undefined);
    assert.equal(s.queueDepth(q), 0);
    assert.deepEqual(s.queues(), []);
    // A model added again under the same name is a new queue, independent of the old handle.
    const again = s.addModel(info('m'));
    assert.notEqual(again, q);
    assert.equal(s.queues().length, 1);
  });
});
