import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { Cancellation, type CancelSignal } from '@hloserve/common/cancellation';
import { ServeError, type ErrorCode } from '@hloserve/common/errors';
import { ManualClock } from '../../src/scheduler/manual-clock.js';
import type { ModelSchedulingInfo } from '../../src/scheduler/model-info.js';
import { INLINE_MAX_SECONDS, type RequestTiming, type SchedulerOptions } from '../../src/scheduler/scheduler.js';
import { Scheduler } from './named-scheduler.js';
import type { SchedulerEvent } from '../../src/scheduler/events.js';
import type { HostTensor } from '../../src/tensor.js';
import { FakeExecutor, f32, flush, values } from './fake-executor.js';

interface Tracked {
  state: 'pending' | 'fulfilled' | 'rejected';
  value?: HostTensor[];
  error?: unknown;
  readonly code: () => ErrorCode | 'ok' | 'pending';
}

/** Observes a submit without letting a rejection go unhandled. */
function track(p: Promise<HostTensor[]>): Tracked {
  const t: Tracked = {
    state: 'pending',
    code: () => (t.state === 'pending' ? 'pending' : t.state === 'fulfilled' ? 'ok' : (t.error as ServeError).code),
  };
  p.then(
    (v) => {
      t.state = 'fulfilled';
      t.value = v;
    },
    (e: unknown) => {
      t.state = 'rejected';
      t.error = e;
    },
  );
  return t;
}

const model = (name: string, over: Partial<ModelSchedulingInfo> = {}): ModelSchedulingInfo => ({
  name,
  compiledBatchSizes: [1],
  inputBatchAxes: [0],
  outputBatchAxes: [0],
  ...over,
});

/** One f32 input of `rows` x 2, values base, base+1, ... */
const rowsOf = (rows: number, base = 0): HostTensor[] => [
  f32(
    'x',
    [rows, 2],
    Array.from({ length: rows * 2 }, (_, i) => base + i),
  ),
];

/** The two kinds of signal callers pass: an AbortController's, and the transports' Cancellation. */
const cancellers: [string, () => { signal: CancelSignal; cancel(): void }][] = [
  [
    'AbortSignal',
    () => {
      const ac = new AbortController();
      return { signal: ac.signal, cancel: () => ac.abort() };
    },
  ],
  [
    'Cancellation',
    () => {
      const c = new Cancellation();
      return { signal: c, cancel: () => c.cancel() };
    },
  ],
];

function setup(options: Partial<SchedulerOptions> = {}) {
  const clock = new ManualClock(1_000);
  const exec = new FakeExecutor(clock);
  const events: SchedulerEvent[] = [];
  const warnings: string[] = [];
  const sched = new Scheduler({
    executor: exec,
    clock,
    logger: { warn: (m) => void warnings.push(m) },
    onEvent: (e) => void events.push(e),
    ...options,
  });
  const dispatched = () => events.filter((e) => e.type === 'dispatch').map((e) => (e as { model: string }).model);
  return { clock, exec, events, warnings, sched, dispatched };
}

suite('Scheduler: admission', () => {
  test('a full queue answers QUEUE_FULL (RESOURCE_EXHAUSTED) at once, and recovers when drained', async () => {
    const { exec, sched } = setup();
    sched.addModel(model('m', { maxQueueDepth: 2 }));
    const r1 = track(sched.submit('m', rowsOf(1)));
    await flush();
    assert.equal(exec.calls.length, 1, 'r1 executes, leaving the queue empty');
    const r2 = track(sched.submit('m', rowsOf(1)));
    const r3 = track(sched.submit('m', rowsOf(1)));
    const r4 = track(sched.submit('m', rowsOf(1)));
    await flush();
    assert.equal(r4.code(), 'HLO_ERR_QUEUE_FULL');
    assert.equal((r4.error as ServeError).grpcStatus, 8 /* RESOURCE_EXHAUSTED */);
    assert.equal(sched.stats('m')!.dropped['queue-full'], 1);
    assert.equal(sched.queueDepth('m'), 2);
    exec.calls[0]!.finish();
    await flush();
    assert.equal(r1.code(), 'ok');
    assert.equal(sched.queueDepth('m'), 1);
    const r5 = track(sched.submit('m', rowsOf(1)));
    await flush();
    assert.equal(r5.code(), 'pending', 'accepted again');
    for (let i = 1; i < 4; i++) {
      exec.calls[i]!.finish();
      await flush();
    }
    assert.deepEqual(
      [r2, r3, r5].map((r) => r.code()),
      ['ok', 'ok', 'ok'],
    );
    assert.equal(sched.stats('m')!.requestsServed, 4);
  });

  test('refusals at submit: unknown model, too many rows (never split), unpaddable extents', async () => {
    const { sched, exec } = setup();
    sched.addModel(model('m', { compiledBatchSizes: [1, 4, 8] }));
    sched.addModel(model('fixed', { compiledBatchSizes: [2, 4], outputBatchAxes: [null] }));
    const unknown = track(sched.submit('nope', rowsOf(1)));
    const big = track(sched.submit('m', rowsOf(9)));
    const fixed3 = track(sched.submit('fixed', rowsOf(3)));
    const fixed4 = track(sched.submit('fixed', rowsOf(4)));
    const wrongArity = track(sched.submit('m', [...rowsOf(1), ...rowsOf(1)]));
    await flush();
    assert.equal(unknown.code(), 'HLO_ERR_MODEL_NOT_FOUND');
    assert.equal(big.code(), 'HLO_ERR_INVALID_ARGUMENT');
    assert.match((big.error as Error).message, /largest compiled batch size is 8/);
    assert.equal(fixed3.code(), 'HLO_ERR_INVALID_ARGUMENT');
    assert.equal(wrongArity.code(), 'HLO_ERR_INVALID_ARGUMENT');
    assert.equal(fixed4.code(), 'pending');
    assert.equal(exec.calls.length, 1);
    assert.equal(exec.calls[0]!.request.batchSize, 4);
    assert.equal(sched.stats('m')!.dropped.invalid, 2);
  });

  test('submit never throws synchronously', () => {
    const { sched } = setup();
    const p = sched.submit('nope', rowsOf(1));
    assert.ok(p instanceof Promise);
    p.catch(() => undefined);
  });
});

suite('Scheduler: coalescing', () => {
  test('requests queued behind a running batch share the next compiled size; outputs sliced per request', async () => {
    const { exec, sched } = setup();
    sched.addModel(model('m', { compiledBatchSizes: [1, 4, 8] }));
    const r0 = track(sched.submit('m', rowsOf(1, 100)));
    await flush();
    assert.equal(exec.calls[0]!.request.batchSize, 1);
    const a = track(sched.submit('m', rowsOf(2, 0)));
    const b = track(sched.submit('m', rowsOf(1, 10)));
    const c = track(sched.submit('m', rowsOf(3, 20)));
    await flush();
    exec.calls[0]!.finish();
    await flush();
    assert.equal(r0.code(), 'ok');
    // rows 2,1,3 -> R=6 -> B=4 (largest fillable), takes a and b (3 rows) and pads one.
    const call = exec.calls[1]!.request;
    assert.deepEqual([call.batchSize, call.rows, call.requests], [4, 3, 2]);
    assert.deepEqual(call.inputs[0]!.shape, [4, 2]);
    assert.deepEqual(values(call.inputs[0]!), [0, 1, 2, 3, 10, 11, 0, 0]);
    exec.calls[1]!.finish();
    await flush();
    assert.deepEqual(a.value![0]!.shape, [2, 2]);
    assert.deepEqual(values(a.value![0]!), [0, 2, 4, 6]);
    assert.deepEqual(b.value![0]!.shape, [1, 2]);
    assert.deepEqual(values(b.value![0]!), [20, 22]);
    const callC = exec.calls[2]!.request;
    assert.deepEqual([callC.batchSize, callC.rows, callC.requests], [4, 3, 1]);
    exec.calls[2]!.finish();
    await flush();
    assert.deepEqual(values(c.value![0]!), [40, 42, 44, 46, 48, 50]);
    const s = sched.stats('m')!;
    assert.deepEqual(s.batchSizeHistogram, { 1: 1, 4: 2 });
    assert.equal(s.rowsServed, 7);
    assert.equal(s.paddedRows, 2);
    assert.equal(s.dispatchCount, 3);
  });

  test('concurrent submits in one tick coalesce even on an idle device', async () => {
    const { exec, sched } = setup();
    sched.addModel(model('m', { compiledBatchSizes: [4] }));
    const rs = [
      track(sched.submit('m', rowsOf(1, 0))),
      track(sched.submit('m', rowsOf(2, 10))),
      track(sched.submit('m', rowsOf(1, 20))),
    ];
    await flush();
    assert.equal(exec.calls.length, 1);
    assert.deepEqual([exec.calls[0]!.request.batchSize, exec.calls[0]!.request.rows], [4, 4]);
    exec.calls[0]!.finish();
    await flush();
    assert.deepEqual(
      rs.map((r) => values(r.value![0]!)),
      [
        [0, 2],
        [20, 22, 24, 26],
        [40, 42],
      ],
    );
  });

  test('requests of another shape never join a batch', async () => {
    const { exec, sched } = setup();
    sched.addModel(model('m', { compiledBatchSizes: [4] }));
    const a = track(sched.submit('m', rowsOf(1)));
    const odd = track(sched.submit('m', [f32('x', [1, 3], [1, 2, 3])]));
    const b = track(sched.submit('m', rowsOf(1)));
    await flush();
    assert.equal(exec.calls[0]!.request.requests, 1, 'the odd shape cuts the run');
    for (let i = 0; i < 3; i++) {
      exec.calls[i]!.finish();
      await flush();
    }
    assert.deepEqual([a.code(), odd.code(), b.code()], ['ok', 'ok', 'ok']);
    assert.deepEqual(
      exec.calls.map((c) => c.request.requests),
      [1, 1, 1],
    );
  });

  test('measured costs steer the size: one padded B=4 instead of three B=1 runs', async () => {
    const { exec, sched } = setup();
    sched.addModel(model('m', { compiledBatchSizes: [1, 4] }));
    sched.seedCost('m', 1, 0.01);
    sched.seedCost('m', 4, 0.011);
    const blocker = track(sched.submit('m', rowsOf(1)));
    await flush();
    const rs = [0, 1, 2].map(() => track(sched.submit('m', rowsOf(1))));
    await flush();
    exec.calls[0]!.finish();
    await flush();
    assert.deepEqual([exec.calls[1]!.request.batchSize, exec.calls[1]!.request.requests], [4, 3]);
    exec.calls[1]!.finish();
    await flush();
    assert.deepEqual(
      [blocker, ...rs].map((r) => r.code()),
      ['ok', 'ok', 'ok', 'ok'],
    );
  });
});

suite('Scheduler: disciplines', () => {
  /** 10:1 offered load, both backlogged, equal weights; returns dispatch counts in the first n. */
  async function tenToOne(discipline: 'fair' | 'fifo', n: number) {
    const { clock, exec, sched, dispatched } = setup({ discipline, maxQueueDepth: 5000 });
    exec.costMs = () => 10;
    sched.addModel(model('A'));
    sched.addModel(model('B'));
    const all: Tracked[] = [];
    for (let i = 0; i < 1100; i++) {
      all.push(track(sched.submit(i % 11 === 10 ? 'B' : 'A', rowsOf(1))));
      clock.advance(0.001);
    }
    await flush();
    assert.ok(all.every((r) => r.code() === 'ok'));
    const first = dispatched().slice(0, n);
    return { A: first.filter((m) => m === 'A').length, B: first.filter((m) => m === 'B').length, sched };
  }

  test('fair: equal weights get near-equal device time under 10:1 offered load', async () => {
    const { A, B } = await tenToOne('fair', 150);
    assert.ok(Math.abs(A - B) <= 6, `A ${A} vs B ${B}`);
  });

  test('fair: device time used while alone is not held against a model afterwards', async () => {
    const { clock, exec, sched, dispatched } = setup({ maxQueueDepth: 5000 });
    exec.costMs = () => 10;
    sched.addModel(model('A'));
    sched.addModel(model('B'));
    // B has the device to itself for a second of compute...
    const alone = Array.from({ length: 100 }, () => track(sched.submit('B', rowsOf(1))));
    await flush();
    assert.ok(alone.every((r) => r.code() === 'ok'));
    const before = dispatched().length;
    // ...then A arrives with ten times B's load; B must still get about half the device.
    const all: Tracked[] = [];
    for (let i = 0; i < 1100; i++) {
      all.push(track(sched.submit(i % 11 === 10 ? 'B' : 'A', rowsOf(1))));
      clock.advance(0.001);
    }
    await flush();
    const next = dispatched().slice(before, before + 60);
    const b = next.filter((m) => m === 'B').length;
    assert.ok(b >= 25, `B got ${b} of the first 60 dispatches after A arrived`);
  });

  test('fifo under the same load serves in arrival order (about 10:1)', async () => {
    const { A, B } = await tenToOne('fifo', 150);
    assert.ok(A >= 130 && B <= 20, `A ${A} vs B ${B}`);
  });

  test('fair shares are in compute time: a 3x costlier model gets a third of the dispatches', async () => {
    const { exec, sched, events } = setup({ maxQueueDepth: 5000 });
    exec.costMs = (m) => (m === 'cheap' ? 10 : 30);
    sched.addModel(model('cheap'));
    sched.addModel(model('dear'));
    const all: Tracked[] = [];
    for (let i = 0; i < 600; i++) all.push(track(sched.submit(i % 2 ? 'cheap' : 'dear', rowsOf(1))));
    await flush();
    let cheap = 0;
    let dear = 0;
    for (const e of events) {
      if (e.type !== 'dispatch-done') continue;
      if (cheap + dear >= 6) break; // the first 6 s of device time, both still backlogged
      if (e.model === 'cheap') cheap += e.computeSeconds;
      else dear += e.computeSeconds;
    }
    assert.ok(Math.abs(cheap - dear) / (cheap + dear) < 0.05, `cheap ${cheap} s vs dear ${dear} s`);
  });

  test('fair: idle models do not dilute the shares of the busy ones (a cheap model is not starved)', async () => {
    const { exec, sched, events } = setup({ maxQueueDepth: 5000 });
    exec.costMs = (m) => (m === 'cheap' ? 1 : 20);
    sched.addModel(model('cheap'));
    sched.addModel(model('dear'));
    // Five models that never receive a request: counting their weight put both busy models over
    // their "share" at once, and then the expensive one won every contest.
    for (let i = 0; i < 5; i++) sched.addModel(model(`idle${i}`));
    for (let i = 0; i < 3000; i++) track(sched.submit(i % 2 ? 'cheap' : 'dear', rowsOf(1)));
    await flush();
    let cheap = 0;
    let dear = 0;
    for (const e of events) {
      if (e.type !== 'dispatch-done') continue;
      if (cheap + dear >= 2) break; // both still backlogged (cheap has 1.5 s of work in all)
      if (e.model === 'cheap') cheap += e.computeSeconds;
      else dear += e.computeSeconds;
    }
    assert.ok(Math.abs(cheap - dear) / (cheap + dear) < 0.1, `cheap ${cheap} s vs dear ${dear} s`);
  });

  test('fair weights: weight 3 vs 1 gets about three quarters', async () => {
    const { exec, sched, dispatched } = setup({ maxQueueDepth: 5000 });
    exec.costMs = () => 10;
    sched.addModel(model('heavy', { weight: 3 }));
    sched.addModel(model('light'));
    for (let i = 0; i < 800; i++) track(sched.submit(i % 2 ? 'heavy' : 'light', rowsOf(1)));
    await flush();
    const first = dispatched().slice(0, 400);
    const heavy = first.filter((m) => m === 'heavy').length;
    assert.ok(heavy >= 285 && heavy <= 315, `heavy ${heavy}/400`);
  });

  test('edf: earliest deadline first, requests without one last', async () => {
    const { clock, exec, sched } = setup({ discipline: 'edf' });
    for (const m of ['blocker', 'a', 'b', 'c']) sched.addModel(model(m));
    track(sched.submit('blocker', rowsOf(1)));
    await flush();
    const now = clock.now();
    track(sched.submit('c', rowsOf(1)));
    track(sched.submit('a', rowsOf(1), { deadline: now + 1000 }));
    track(sched.submit('b', rowsOf(1), { deadline: now + 500 }));
    await flush();
    for (let i = 0; i < 4; i++) {
      exec.calls[i]!.finish();
      await flush();
    }
    assert.deepEqual(exec.order, ['blocker', 'b', 'a', 'c']);
  });

  test('edf sheds work that cannot finish in time (cost estimate as margin); fifo runs it', async () => {
    for (const discipline of ['edf', 'fifo'] as const) {
      const { clock, exec, sched } = setup({ discipline });
      sched.addModel(model('m'));
      sched.seedCost('m', 1, 0.05);
      const r = track(sched.submit('m', rowsOf(1), { deadline: clock.now() + 20 }));
      await flush();
      if (discipline === 'edf') {
        assert.equal(r.code(), 'HLO_ERR_DEADLINE_EXCEEDED');
        assert.equal(exec.calls.length, 0);
        assert.equal(sched.stats('m')!.dropped.shed, 1);
      } else {
        assert.equal(exec.calls.length, 1);
        exec.calls[0]!.finish();
        await flush();
        assert.equal(r.code(), 'ok');
      }
    }
  });

  test('fifo picks the oldest front request however long another queue is', async () => {
    const { exec, sched } = setup({ discipline: 'fifo', maxQueueDepth: 100_000 });
    sched.addModel(model('old'));
    sched.addModel(model('young'));
    track(sched.submit('old', rowsOf(1)));
    for (let i = 0; i < 20_000; i++) track(sched.submit('young', rowsOf(1)));
    await flush();
    assert.equal(exec.order[0], 'old');
  });
});

suite("Scheduler: a meta model's sub-calls go ahead of fresh work", () => {
  test('a sub-call queued behind fresh requests of its model is dispatched first; sub-calls stay FIFO', async () => {
    const { exec, sched } = setup();
    sched.addModel(model('m'));
    track(sched.submit('m', rowsOf(1, 0)));
    await flush();
    assert.equal(exec.calls.length, 1, 'the device is busy');
    const fresh1 = track(sched.submit('m', rowsOf(1, 100)));
    const fresh2 = track(sched.submit('m', rowsOf(1, 200)));
    const sub1 = track(sched.submit('m', rowsOf(1, 300), { nested: true }));
    const sub2 = track(sched.submit('m', rowsOf(1, 400), { nested: true }));
    await flush();
    for (let i = 0; i < 5; i++) {
      exec.calls[i]!.finish();
      await flush();
    }
    const order = exec.calls.map((c) => values(c.request.inputs[0]!)[0]);
    assert.deepEqual(order, [0, 300, 400, 100, 200]);
    assert.deepEqual(
      [sub1, sub2, fresh1, fresh2].map((r) => r.code()),
      ['ok', 'ok', 'ok', 'ok'],
    );
    assert.equal(sched.queueDepth('m'), 0);
  });

  for (const discipline of ['fair', 'fifo', 'edf'] as const) {
    test(`${discipline}: a model whose front is a sub-call is served before older fresh work of another`, async () => {
      const { exec, sched } = setup({ discipline });
      sched.addModel(model('fresh', { weight: 100 }));
      sched.addModel(model('sub'));
      track(sched.submit('fresh', rowsOf(1), { deadline: 1_000_000 }));
      track(sched.submit('sub', rowsOf(1), { nested: true }));
      await flush();
      exec.calls[0]!.finish();
      await flush();
      assert.deepEqual(exec.order, ['sub', 'fresh']);
    });
  }

  test('cancelling a queued sub-call keeps the rest of the order', async () => {
    const { exec, sched } = setup();
    sched.addModel(model('m'));
    track(sched.submit('m', rowsOf(1, 0)));
    await flush();
    const ac = new AbortController();
    track(sched.submit('m', rowsOf(1, 100)));
    const gone = track(sched.submit('m', rowsOf(1, 300), { nested: true, signal: ac.signal }));
    track(sched.submit('m', rowsOf(1, 400), { nested: true }));
    ac.abort();
    track(sched.submit('m', rowsOf(1, 500), { nested: true }));
    await flush();
    assert.equal(gone.code(), 'HLO_ERR_CANCELLED');
    for (let i = 0; i < 4; i++) {
      exec.calls[i]!.finish();
      await flush();
    }
    assert.deepEqual(
      exec.calls.map((c) => values(c.request.inputs[0]!)[0]),
      [0, 400, 500, 100],
    );
  });
});

suite('Scheduler: deadlines, cancellation, timeouts', () => {
  test('a queued request whose deadline passes is answered promptly and never runs', async () => {
    const { clock, exec, sched } = setup({ discipline: 'fifo' });
    sched.addModel(model('m'));
    const blocker = track(sched.submit('m', rowsOf(1)));
    await flush();
    const late = track(sched.submit('m', rowsOf(1), { deadline: clock.now() + 100 }));
    const patient = track(sched.submit('m', rowsOf(1), { deadline: clock.now() + 10_000 }));
    await flush();
    clock.advance(150);
    await flush();
    assert.equal(late.code(), 'HLO_ERR_DEADLINE_EXCEEDED', 'answered while the device is still busy');
    assert.equal(patient.code(), 'pending');
    exec.calls[0]!.finish();
    await flush();
    exec.calls[1]!.finish();
    await flush();
    assert.equal(exec.calls.length, 2);
    assert.deepEqual([blocker.code(), patient.code()], ['ok', 'ok']);
    assert.equal(sched.stats('m')!.dropped.expired, 1);
    const expiredNow = track(sched.submit('m', rowsOf(1), { deadline: clock.now() }));
    await flush();
    assert.equal(expiredNow.code(), 'HLO_ERR_DEADLINE_EXCEEDED');
  });

  for (const [kind, make] of cancellers) {
    test(`abort (${kind}): a queued request leaves the queue; an executing one is answered while its batch completes`, async () => {
      const { exec, sched } = setup();
      sched.addModel(model('m', { compiledBatchSizes: [4] }));
      const blockerCtl = make();
      const mate = track(sched.submit('m', rowsOf(1, 0)));
      const blocker = track(sched.submit('m', rowsOf(1, 10), { signal: blockerCtl.signal }));
      await flush();
      assert.equal(exec.calls[0]!.request.requests, 2);
      const queuedCtl = make();
      const queued = track(sched.submit('m', rowsOf(1), { signal: queuedCtl.signal }));
      await flush();
      queuedCtl.cancel();
      blockerCtl.cancel();
      await flush();
      assert.equal(queued.code(), 'HLO_ERR_CANCELLED');
      assert.equal(blocker.code(), 'HLO_ERR_CANCELLED');
      assert.equal(sched.queueDepth('m'), 0);
      exec.calls[0]!.finish();
      await flush();
      assert.equal(mate.code(), 'ok');
      assert.deepEqual(values(mate.value![0]!), [0, 2]);
      assert.equal(exec.calls.length, 1, 'the cancelled queued request never ran');
      const s = sched.stats('m')!;
      assert.equal(s.dropped.cancelled, 2);
      assert.equal(s.requestsServed, 1);
      const pre = make();
      pre.cancel();
      const already = track(sched.submit('m', rowsOf(1), { signal: pre.signal }));
      await flush();
      assert.equal(already.code(), 'HLO_ERR_CANCELLED');
    });
  }

  test('dispatch timeout with an executor that cannot cancel: callers answered, its signal never aborts', async () => {
    const { clock, exec, sched } = setup({ dispatchTimeoutSeconds: 1 });
    exec.cancellable = false;
    sched.addModel(model('m'));
    const stuck = track(sched.submit('m', rowsOf(1)));
    await flush();
    const signal = exec.calls[0]!.request.signal;
    clock.advance(1000);
    await flush();
    assert.equal(stuck.code(), 'HLO_ERR_DEADLINE_EXCEEDED');
    assert.equal(signal.aborted, false);
    assert.equal(sched.stats('m')!.dispatchTimeouts, 1);
    const next = track(sched.submit('m', rowsOf(1)));
    await flush();
    assert.equal(exec.calls.length, 1, 'the device is held until the late work returns');
    exec.calls[0]!.finish();
    await flush();
    exec.calls[1]!.finish();
    await flush();
    assert.equal(next.code(), 'ok');
  });

  test('dispatch timeout: callers get DEADLINE_EXCEEDED, the device slot stays held until the work returns', async () => {
    const { clock, exec, sched, warnings, events } = setup({ dispatchTimeoutSeconds: 1 });
    sched.addModel(model('m'));
    const stuck = track(sched.submit('m', rowsOf(1)));
    await flush();
    const next = track(sched.submit('m', rowsOf(1)));
    await flush();
    clock.advance(999);
    await flush();
    assert.equal(stuck.code(), 'pending');
    clock.advance(1);
    await flush();
    assert.equal(stuck.code(), 'HLO_ERR_DEADLINE_EXCEEDED');
    assert.match((stuck.error as Error).message, /dispatch_timeout_seconds/);
    assert.equal(exec.calls[0]!.request.signal.aborted, true);
    assert.equal(sched.stats('m')!.dispatchTimeouts, 1);
    assert.ok(warnings.some((w) => /timed out/.test(w)));
    assert.ok(events.some((e) => e.type === 'dispatch-timeout'));
    assert.equal(exec.calls.length, 1, 'nothing else is started on a device that has not returned');
    exec.calls[0]!.finish();
    await flush();
    assert.equal(stuck.code(), 'HLO_ERR_DEADLINE_EXCEEDED', 'the late result is discarded');
    assert.equal(exec.calls.length, 2);
    exec.calls[1]!.finish();
    await flush();
    assert.equal(next.code(), 'ok');
    assert.equal(sched.stats('m')!.costEstimates[1], 0, 'the timed-out run did not teach the cost model');
  });

  test('an execution failure answers its batch with the error and the next batch still runs', async () => {
    const { exec, sched } = setup();
    sched.addModel(model('m'));
    const bad = track(sched.submit('m', rowsOf(1)));
    await flush();
    const good = track(sched.submit('m', rowsOf(1)));
    const pjrt = Object.assign(new Error('device fault'), { name: 'PjrtError' });
    exec.calls[0]!.fail(pjrt);
    await flush();
    assert.equal(bad.code(), 'HLO_ERR_RUNTIME');
    exec.calls[1]!.finish();
    await flush();
    assert.equal(good.code(), 'ok');
    assert.equal(sched.stats('m')!.failedDispatches, 1);
  });

  test('a failed weight acquire fails one batch; the model is retried for the next', async () => {
    const { exec, sched } = setup();
    sched.addModel(model('m'));
    let failures = 1;
    exec.prepareFailure = () => (failures-- > 0 ? new ServeError('HLO_ERR_RUNTIME', 'out of device memory') : null);
    const first = track(sched.submit('m', rowsOf(1)));
    await flush();
    const second = track(sched.submit('m', rowsOf(1)));
    await flush();
    assert.equal(first.code(), 'HLO_ERR_RUNTIME');
    exec.calls[0]!.finish();
    await flush();
    assert.equal(second.code(), 'ok');
  });
});

suite('Scheduler: batching window', () => {
  test('waits up to max_queue_delay_us from the front arrival for a fuller batch', async () => {
    const { clock, exec, sched } = setup();
    sched.addModel(model('m', { compiledBatchSizes: [1, 4], maxQueueDelayUs: 5_000 }));
    // As after warmup: measured costs make one padded B=4 cheaper per row than B=1 runs.
    sched.seedCost('m', 1, 0.01);
    sched.seedCost('m', 4, 0.012);
    const a = track(sched.submit('m', rowsOf(1)));
    await flush();
    assert.equal(exec.calls.length, 0, 'held for the window');
    clock.advance(2);
    const b = track(sched.submit('m', rowsOf(2)));
    await flush();
    assert.equal(exec.calls.length, 0);
    clock.advance(3);
    await flush();
    assert.equal(exec.calls.length, 1, 'window closed 5 ms after the front arrival');
    assert.deepEqual([exec.calls[0]!.request.batchSize, exec.calls[0]!.request.rows], [4, 3]);
    exec.calls[0]!.finish();
    await flush();
    assert.deepEqual([a.code(), b.code()], ['ok', 'ok']);
  });

  test('the scheduler-wide window applies to models that set none; a null patch reverts to it', async () => {
    const { clock, exec, sched } = setup({ maxQueueDelayUs: 3_000 });
    sched.addModel(model('m', { compiledBatchSizes: [4] }));
    track(sched.submit('m', rowsOf(1)));
    await flush();
    assert.equal(exec.calls.length, 0);
    clock.advance(3);
    await flush();
    assert.equal(exec.calls.length, 1);
    sched.updateModel('m', { maxQueueDelayUs: 0 });
    track(sched.submit('m', rowsOf(1)));
    exec.calls[0]!.finish();
    await flush();
    assert.equal(exec.calls.length, 2, 'no window');
    sched.updateModel('m', { maxQueueDelayUs: null });
    track(sched.submit('m', rowsOf(1)));
    exec.calls[1]!.finish();
    await flush();
    assert.equal(exec.calls.length, 2, 'the default window again');
  });

  test('a full batch goes at once; another model with work is served while one waits', async () => {
    const { exec, sched } = setup();
    sched.addModel(model('w', { compiledBatchSizes: [4], maxQueueDelayUs: 1_000_000 }));
    sched.addModel(model('now'));
    track(sched.submit('w', rowsOf(1)));
    track(sched.submit('now', rowsOf(1)));
    await flush();
    assert.deepEqual(exec.order, ['now']);
    exec.calls[0]!.finish();
    track(sched.submit('w', rowsOf(3)));
    await flush();
    assert.deepEqual(exec.order, ['now', 'w']);
    assert.equal(exec.calls[1]!.request.rows, 4);
  });
});

suite('Scheduler: pipeline and lifecycle', () => {
  test('the next dispatch’s weights are acquired while the current one executes', async () => {
    const { exec, sched } = setup();
    sched.addModel(model('a'));
    sched.addModel(model('b'));
    track(sched.submit('a', rowsOf(1)));
    await flush();
    track(sched.submit('b', rowsOf(1)));
    await flush();
    assert.deepEqual(exec.prepared, ['a', 'b'], 'b prepared during a');
    assert.deepEqual(exec.order, ['a']);
    assert.deepEqual(exec.released, []);
    exec.calls[0]!.finish();
    await flush();
    assert.deepEqual(exec.released, ['a']);
    assert.deepEqual(exec.order, ['a', 'b']);
  });

  test('maxInflight 2 keeps two executions on the device', async () => {
    const { exec, sched } = setup({ maxInflight: 2 });
    sched.addModel(model('a'));
    sched.addModel(model('b'));
    sched.addModel(model('c'));
    for (const m of ['a', 'b', 'c']) track(sched.submit(m, rowsOf(1)));
    await flush();
    assert.equal(exec.calls.length, 2);
    assert.equal(sched.executing, 2);
    exec.calls[0]!.finish();
    await flush();
    assert.equal(exec.calls.length, 3);
  });

  test('an executor that releases its inputs gets batch buffers back only after their execution returns', async () => {
    const exec = new FakeExecutor(new ManualClock(1_000));
    exec.releasesInputs = true; // read when the scheduler is built
    const sched = new Scheduler({ executor: exec, clock: exec.clock, maxInflight: 2 });
    sched.addModel(model('m', { compiledBatchSizes: [4] }));
    const first = track(sched.submit('m', rowsOf(3, 100)));
    await flush();
    const second = track(sched.submit('m', rowsOf(2, 200)));
    await flush();
    assert.equal(exec.calls.length, 2);
    const [c0, c1] = exec.calls;
    // The first batch is still executing: the second must not be gathered into its buffer.
    assert.notEqual(c1!.request.inputs[0]!.data, c0!.request.inputs[0]!.data);
    assert.deepEqual(values(c1!.request.inputs[0]!), [200, 201, 202, 203, 0, 0, 0, 0]);
    c0!.finish();
    await flush();
    assert.deepEqual(values(first.value![0]!), [200, 202, 204, 206, 208, 210]);
    const third = track(sched.submit('m', rowsOf(1, 300)));
    await flush();
    const c2 = exec.calls[2]!;
    assert.equal(c2.request.inputs[0]!.data, c0!.request.inputs[0]!.data, 'the returned buffer is reused');
    // Rows the earlier batch left there are overwritten with padding, never served again.
    assert.deepEqual(values(c2.request.inputs[0]!), [300, 301, 0, 0, 0, 0, 0, 0]);
    c1!.finish();
    c2.finish();
    await flush();
    assert.deepEqual(values(second.value![0]!), [400, 402, 404, 406]);
    assert.deepEqual(values(third.value![0]!), [600, 602]);
  });

  test('costs are learned per (model, batch size) from measured execution time; timing is reported', async () => {
    const { exec, sched } = setup();
    exec.costMs = (_m, b) => (b === 4 ? 20 : 5);
    sched.addModel(model('m', { compiledBatchSizes: [1, 4] }));
    const timing: RequestTiming = {};
    track(sched.submit('m', rowsOf(1), { timing }));
    await flush();
    const big = track(sched.submit('m', rowsOf(4)));
    await flush();
    assert.equal(big.code(), 'ok');
    assert.deepEqual(sched.stats('m')!.costEstimates, { 1: 0.005, 4: 0.02 });
    assert.equal(timing.batchSize, 1);
    assert.equal(timing.computeSeconds, 0.005);
    assert.equal(timing.queueSeconds, 0);
    // The scheduler's own clock readings, so that a caller need not read the clock again.
    assert.equal(timing.submittedAt, 1_000);
    assert.equal(timing.settledAt, 1_005);
    const s = sched.stats('m')!;
    assert.equal(s.computeSecondsTotal, 0.025);
  });

  test('removing a model answers its queue "was unloaded"; its running batch completes', async () => {
    const { exec, sched } = setup();
    sched.addModel(model('m'));
    const running = track(sched.submit('m', rowsOf(1)));
    await flush();
    const queued = track(sched.submit('m', rowsOf(1)));
    await flush();
    assert.equal(sched.removeModel('m'), true);
    await flush();
    assert.equal(queued.code(), 'HLO_ERR_MODEL_NOT_FOUND');
    assert.match((queued.error as Error).message, /was unloaded/);
    exec.calls[0]!.finish();
    await flush();
    assert.equal(running.code(), 'ok');
    assert.equal(sched.hasModel('m'), false);
    assert.deepEqual(exec.released, ['m', 'm'], 'the lease prepared for the queued batch was released');
    sched.addModel(model('m'));
    const again = track(sched.submit('m', rowsOf(1)));
    await flush();
    exec.calls[1]!.finish();
    await flush();
    assert.equal(again.code(), 'ok');
  });

  test('replaceModel: queued requests run on the version they were queued with, never batched with the next', async () => {
    const { exec, sched } = setup();
    sched.addModel(model('m', { compiledBatchSizes: [1, 8] }), 'v1');
    track(sched.submit('m', rowsOf(1)));
    await flush();
    // Queued behind the running batch, on v1 (sizes 1 and 8): 8 rows are fine there.
    const oldSmall = track(sched.submit('m', rowsOf(2), { version: 'v1' }));
    const oldLarge = track(sched.submit('m', rowsOf(8)));
    await flush();
    sched.replaceModel(model('m', { compiledBatchSizes: [1, 4] }), 'v2');
    const fresh = track(sched.submit('m', rowsOf(2)));
    const stale = track(sched.submit('m', rowsOf(1), { version: 'v1' }));
    await flush();
    assert.equal(stale.code(), 'HLO_ERR_MODEL_NOT_READY', 'a request decoded against v1 is not queued on v2');
    let finished = 0;
    for (let round = 0; round < 6; round++) {
      while (finished < exec.calls.length) exec.calls[finished++]!.finish();
      await flush();
    }
    const runs = exec.calls.slice(1).map((c) => [c.request.version, c.request.batchSize, c.request.rows]);
    assert.deepEqual(runs, [
      ['v1', 8, 2],
      ['v1', 8, 8],
      ['v2', 4, 2],
    ]);
    assert.deepEqual([oldSmall.code(), oldLarge.code(), fresh.code()], ['ok', 'ok', 'ok']);
  });

  test('shutdown with drain serves everything queued (windows close), then refuses new work', async () => {
    const { exec, sched } = setup();
    exec.costMs = () => 1;
    sched.addModel(model('m', { compiledBatchSizes: [8], maxQueueDelayUs: 60_000_000 }));
    const rs = [track(sched.submit('m', rowsOf(1))), track(sched.submit('m', rowsOf(1)))];
    await flush();
    assert.equal(exec.calls.length, 0, 'held by the window');
    let done = false;
    const stopped = sched.shutdown({ drain: true }).then(() => (done = true));
    const late = track(sched.submit('m', rowsOf(1)));
    await stopped;
    assert.ok(done);
    assert.deepEqual(
      rs.map((r) => r.code()),
      ['ok', 'ok'],
    );
    assert.equal(late.code(), 'HLO_ERR_SHUTTING_DOWN');
  });

  test('shutdown without drain rejects queued work and waits for the running batch', async () => {
    const { exec, sched } = setup();
    sched.addModel(model('m'));
    const running = track(sched.submit('m', rowsOf(1)));
    await flush();
    const queued = track(sched.submit('m', rowsOf(1)));
    await flush();
    let done = false;
    const stopped = sched.shutdown({ drain: false }).then(() => (done = true));
    await flush();
    assert.equal(queued.code(), 'HLO_ERR_SHUTTING_DOWN');
    assert.equal(done, false);
    exec.calls[0]!.finish();
    await stopped;
    assert.equal(running.code(), 'ok');
    assert.equal(exec.calls.length, 1);
  });

  test('a throwing event listener does not break serving', async () => {
    const clock = new ManualClock();
    const exec = new FakeExecutor(clock);
    exec.costMs = () => 1;
    const sched = new Scheduler({
      executor: exec,
      clock,
      onEvent: () => {
        throw new Error('listener bug');
      },
    });
    sched.addModel(model('m'));
    const r = track(sched.submit('m', rowsOf(1)));
    await flush();
    assert.equal(r.code(), 'ok');
  });

  test('bad options and model info are refused as configuration errors', () => {
    const exec = new FakeExecutor();
    assert.throws(() => new Scheduler({ executor: exec, recencyPenaltyCap: 0 }), /recency_penalty_cap/);
    assert.throws(() => new Scheduler({ executor: exec, maxInflight: 0 }), /maxInflight/);
    const s = new Scheduler({ executor: exec });
    assert.throws(() => s.addModel(model('m', { weight: 0 })), /weight/);
    assert.throws(() => s.addModel(model('m', { compiledBatchSizes: [-1] })), /compiled batch size/);
    s.addModel(model('m'));
    assert.throws(() => s.addModel(model('m')), /already/);
  });
});

/** The scheduler's pump, then the one event-loop turn a lone inline candidate waits. */
async function turns(): Promise<void> {
  await flush();
  await flush();
}

suite("Scheduler: a single caller's cheap batch may run inline", () => {
  test('mayRunInline only with nothing else executing or queued and a measured cost within INLINE_MAX_SECONDS', async () => {
    const { exec, sched } = setup({ aloneOutsideQueue: () => true });
    for (const name of ['m', 'n', 'big', 'unmeasured']) sched.addModel(model(name));
    sched.seedCost('m', 1, INLINE_MAX_SECONDS / 10);
    sched.seedCost('n', 1, INLINE_MAX_SECONDS / 10);
    sched.seedCost('big', 1, INLINE_MAX_SECONDS * 2);
    const alone = async (name: string): Promise<boolean | undefined> => {
      const r = track(sched.submit(name, rowsOf(1)));
      await turns();
      const call = exec.calls.at(-1)!;
      call.finish();
      await turns();
      assert.equal(r.code(), 'ok');
      return call.request.mayRunInline;
    };
    assert.equal(await alone('unmeasured'), false, 'no measured cost yet');
    assert.equal(await alone('big'), false, 'measured over the bound');
    assert.equal(await alone('m'), true);
    // Two models with work at once: the first dispatch has another waiting, the second runs alone.
    const both = [track(sched.submit('m', rowsOf(1))), track(sched.submit('n', rowsOf(1)))];
    await turns();
    const first = exec.calls.at(-1)!;
    assert.equal(first.request.mayRunInline, false);
    first.finish();
    await turns();
    const second = exec.calls.at(-1)!;
    assert.notEqual(second, first);
    assert.equal(second.request.mayRunInline, true);
    second.finish();
    await turns();
    assert.deepEqual(
      both.map((r) => r.code()),
      ['ok', 'ok'],
    );
  });

  test('an inline-eligible dispatch arms no dispatch timer (nothing else runs meanwhile to notice)', async () => {
    const { clock, exec, sched } = setup({ dispatchTimeoutSeconds: 1, aloneOutsideQueue: () => true });
    sched.addModel(model('m'));
    sched.seedCost('m', 1, INLINE_MAX_SECONDS / 10);
    const r = track(sched.submit('m', rowsOf(1)));
    await turns();
    assert.equal(exec.calls[0]!.request.mayRunInline, true);
    clock.advance(1500);
    await turns();
    assert.equal(r.code(), 'pending');
    exec.calls[0]!.finish();
    await turns();
    assert.equal(r.code(), 'ok');
    assert.equal(sched.stats('m')!.dispatchTimeouts, 0);
  });
});

test('no inline run while the caller holds other requests outside the queue (aloneOutsideQueue)', async () => {
  let alone = false;
  const { exec, sched } = setup({ aloneOutsideQueue: () => alone });
  sched.addModel(model('m'));
  sched.seedCost('m', 1, INLINE_MAX_SECONDS / 10);
  for (const expected of [false, true]) {
    alone = expected;
    const r = track(sched.submit('m', rowsOf(1)));
    await turns();
    assert.equal(exec.calls.at(-1)!.request.mayRunInline, expected);
    exec.calls.at(-1)!.finish();
    await turns();
    assert.equal(r.code(), 'ok');
  }
});

test('a lone request waits one event-loop turn before running inline; one arriving meanwhile joins it', async () => {
  const { exec, sched } = setup({ aloneOutsideQueue: () => true });
  sched.addModel(model('m', { compiledBatchSizes: [1, 2] }));
  sched.seedCost('m', 1, INLINE_MAX_SECONDS / 10);
  sched.seedCost('m', 2, INLINE_MAX_SECONDS / 10);
  const first = track(sched.submit('m', rowsOf(1)));
  await new Promise<void>((resolve) => queueMicrotask(resolve));
  await Promise.resolve();
  assert.equal(exec.calls.length, 0, 'not launched before the loop turns');
  const second = track(sched.submit('m', rowsOf(1)));
  await turns();
  assert.equal(exec.calls.length, 1);
  assert.deepEqual([exec.calls[0]!.request.requests, exec.calls[0]!.request.mayRunInline], [2, false]);
  exec.calls[0]!.finish();
  await turns();
  assert.deepEqual([first.code(), second.code()], ['ok', 'ok']);
});

test('without aloneOutsideQueue nothing runs inline', async () => {
  const { exec, sched } = setup();
  sched.addModel(model('m'));
  sched.seedCost('m', 1, INLINE_MAX_SECONDS / 10);
  const r = track(sched.submit('m', rowsOf(1)));
  await flush();
  assert.equal(exec.calls[0]!.request.mayRunInline, false);
  exec.calls[0]!.finish();
  await flush();
  assert.equal(r.code(), 'ok');
});
