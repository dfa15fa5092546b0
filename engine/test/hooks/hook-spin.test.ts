import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, suite, test } from 'node:test';
import { HookPool, type HookCall } from '../../src/hooks/hook-pool.js';
import { DOORBELL, epochMs, LaneBlock, SLEEPING } from '../../src/hooks/hook-lanes.js';
import { NO_SPIN, SpinPolicy, spinWhile, type SpinLimits } from '../../src/hooks/hook-spin.js';
import { prepareHookSource } from '../../src/hooks/hook-source.js';
import type { HookTensors } from '../../src/hooks/hook-tensor.js';

const limits: SpinLimits = { afterPreMs: 0.15, afterPostMs: 0.05, preemptedMs: 0.02 };
const close = (a: number, b: number): boolean => Math.abs(a - b) < 1e-9;

/** A clock that moves by the given steps, one per reading, then stays. */
function clock(steps: number[]): () => number {
  let t = 0;
  let i = 0;
  return () => (t += steps[Math.min(i++, steps.length - 1)]!);
}

suite('hook thread polling: the policy', () => {
  test('the first lone call of a kind polls up to its cap; then about the gap last seen, and none past the cap', () => {
    const p = new SpinPolicy(limits);
    assert.equal(p.plan('preprocess').pollMs, 0.15);
    assert.equal(p.plan('postprocess').pollMs, 0.05);
    p.sawGap('preprocess', 0.06);
    assert.ok(close(p.plan('preprocess').pollMs, 0.06 * 1.25 + 0.015));
    p.sawGap('postprocess', 0.04);
    assert.equal(p.plan('postprocess').pollMs, 0.05, 'stretched past the cap: the cap');
    p.sawGap('postprocess', 0.06);
    assert.equal(p.plan('postprocess').pollMs, 0, 'a gap past the cap: sleep at once');
    p.sawGap('postprocess', 0.01);
    assert.ok(
      close(p.plan('postprocess').pollMs, 0.01 * 1.25 + 0.015),
      'the gap last seen counts, not a longer one before',
    );
    assert.equal(new SpinPolicy(NO_SPIN).plan('preprocess').pollMs, 0);
  });

  test('a poll that runs out or loses its core skips the next 1, 2, 4 ... 64 polls; an answered one ends that', () => {
    const p = new SpinPolicy(limits);
    const skipsAfter = (): number => {
      let n = 0;
      while (p.plan('preprocess').pollMs === 0) n++;
      return n;
    };
    p.ended('preprocess', 'ranOut');
    assert.equal(skipsAfter(), 1);
    p.ended('preprocess', 'preempted');
    assert.equal(skipsAfter(), 2);
    p.ended('preprocess', 'ranOut');
    assert.equal(skipsAfter(), 4);
    for (let i = 0; i < 10; i++) p.ended('preprocess', 'ranOut');
    assert.equal(skipsAfter(), 64);
    p.ended('preprocess', 'rung');
    assert.equal(skipsAfter(), 0);
    p.ended('preprocess', 'ranOut');
    assert.equal(skipsAfter(), 1, 'after an answered poll the backoff starts again from 1');
    assert.deepEqual(p.counts, { spins: 15, rung: 1, ranOut: 13, preempted: 1, skipped: 72 });
  });

  test('a gap long enough to sleep through, and not too long, is slept through to just before it, then polled', () => {
    const timed: SpinLimits = { ...limits, wakeBeforeMs: 0.03, wakeWithinMs: 2, wakePollMs: 0.1 };
    const p = new SpinPolicy(timed);
    p.sawGap('preprocess', 0.05);
    assert.deepEqual(p.plan('preprocess'), { sleepMs: 0, pollMs: 0.05 * 1.25 + 0.015 }, 'too short to sleep: polled');
    p.sawGap('preprocess', 0.12);
    const within = p.plan('preprocess');
    assert.ok(close(within.sleepMs, 0.09), 'within the cap, but long enough: slept through');
    assert.ok(close(within.pollMs, 0.12 * 1.25 + 0.015 - 0.09));
    p.sawGap('postprocess', 0.4);
    const past = p.plan('postprocess');
    assert.ok(close(past.sleepMs, 0.37), 'past the cap: slept through, not slept until rung');
    assert.ok(close(past.pollMs, 0.1), 'the poll after it has its own bound');
    p.sawGap('postprocess', 2.5);
    assert.deepEqual(p.plan('postprocess'), { sleepMs: 0, pollMs: 0 }, 'too long to foresee: sleep until rung');
    p.sawGap('postprocess', 0.4);
    p.ended('postprocess', 'ranOut');
    assert.deepEqual(p.plan('postprocess'), { sleepMs: 0, pollMs: 0 }, 'a timed plan backs off like a poll');
    assert.equal(p.plan('postprocess').sleepMs > 0, true);
    assert.deepEqual(
      new SpinPolicy(limits).plan('postprocess'),
      { sleepMs: 0, pollMs: 0.05 },
      'no wakeBeforeMs: no timed sleeps',
    );
  });

  test('timed sleeps end sooner by how late they have been ending on this thread', () => {
    const timed: SpinLimits = { ...limits, wakeBeforeMs: 0.03, wakeWithinMs: 2, wakePollMs: 0.1 };
    const p = new SpinPolicy(timed);
    p.sawGap('postprocess', 0.4);
    assert.ok(close(p.plan('postprocess').sleepMs, 0.37), 'nothing learned yet: the margin alone');
    for (let i = 0; i < 200; i++) p.sawLateSleep(0.04);
    assert.ok(Math.abs(p.lateSleepMs - 0.04) < 1e-6, `learned ${p.lateSleepMs}`);
    const sooner = p.plan('postprocess');
    assert.ok(Math.abs(sooner.sleepMs - (0.4 - 0.03 - 0.04)) < 1e-6, `slept ${sooner.sleepMs}`);
    assert.ok(close(sooner.pollMs, 0.1));
    // A gap no longer long enough to sleep through once the lateness is taken off is polled.
    p.sawGap('preprocess', 0.1);
    assert.deepEqual(p.plan('preprocess'), { sleepMs: 0, pollMs: 0.1 * 1.25 + 0.015 });
    // One sleep that overslept by far moves the estimate by a bounded step; early ends count as on time.
    const q = new SpinPolicy(timed);
    q.sawLateSleep(50);
    assert.ok(q.lateSleepMs <= 0.2 / 8 + 1e-12, `one long oversleep: ${q.lateSleepMs}`);
    const r = new SpinPolicy(timed);
    r.sawLateSleep(-1);
    assert.equal(r.lateSleepMs, 0);
  });

  test('each kind backs off alone, and a skip is spent only on a call that would have polled', () => {
    const p = new SpinPolicy(limits);
    p.ended('postprocess', 'ranOut');
    assert.ok(p.plan('preprocess').pollMs > 0, "a postprocess poll's backoff leaves preprocess polls alone");
    p.sawGap('postprocess', 1);
    for (let i = 0; i < 3; i++) assert.equal(p.plan('postprocess').pollMs, 0);
    assert.equal(p.counts.skipped, 0, 'no poll was due: no skip spent');
  });
});

suite('hook thread polling: the doorbell', () => {
  test('a poll ends rung as soon as the doorbell moves, also between two looks', () => {
    const words = new Int32Array(new SharedArrayBuffer(8));
    words[0] = 5;
    assert.equal(spinWhile(words, 0, 4, 1, 0.02, clock([0.001])), 'rung', 'rung before the poll began');
    let reads = 0;
    const ringAtThird = (): number => {
      if (++reads === 3) Atomics.add(words, 0, 1);
      return reads * 0.001;
    };
    assert.equal(spinWhile(words, 0, 5, 1, 0.02, ringAtThird), 'rung');
    assert.equal(reads, 3);
  });

  test('a poll runs out at its bound, and ends preempted when two looks are further apart than allowed', () => {
    const words = new Int32Array(new SharedArrayBuffer(8));
    assert.equal(spinWhile(words, 0, 0, 0.1, 0.02, clock([0.01])), 'ranOut');
    assert.equal(spinWhile(words, 0, 0, 0.1, 0.02, clock([0.01, 0.01, 0.03])), 'preempted');
    // A ring that came while the thread was off its core is still a ring.
    let reads = 0;
    const offCoreThenRung = (): number => {
      if (++reads === 2) Atomics.add(words, 0, 1);
      return reads === 1 ? 0 : 1;
    };
    assert.equal(spinWhile(words, 0, Atomics.load(words, 0), 0.1, 0.02, offCoreThenRung), 'rung');
  });

  test('the engine notifies only a thread that said it sleeps; one that is about to sleep sees the ring', () => {
    const block = new LaneBlock({ lanes: 1, laneBytes: 64 });
    // The thread's steps before it sleeps: say so, then look at the doorbell once more.
    const goesToSleep = (bell: number): boolean => {
      Atomics.store(block.words, SLEEPING, 1);
      return Atomics.load(block.words, DOORBELL) === bell;
    };
    let bell = Atomics.load(block.words, DOORBELL);
    assert.equal(block.ring(), false, 'polling: the ring is a store');
    assert.equal(goesToSleep(bell), false, 'rung after the poll ended, before SLEEPING: the thread does not sleep');
    Atomics.store(block.words, SLEEPING, 0);
    bell = Atomics.load(block.words, DOORBELL);
    assert.equal(goesToSleep(bell), true);
    assert.equal(block.ring(), true, 'rung after SLEEPING: the engine notifies');
  });

  test('a ring says when it was rung, on the clock both threads read, where the thread reads it', () => {
    const block = new LaneBlock({ lanes: 2, laneBytes: 64 });
    const before = epochMs();
    block.ring();
    const after = epochMs();
    const thread = new LaneBlock({ lanes: 2, laneBytes: 64 }, block.sab);
    assert.ok(thread.rungAt[0]! >= before && thread.rungAt[0]! <= after);
    // Its own slot: the lanes' start times are not it.
    thread.startedAt.fill(0);
    assert.ok(block.rungAt[0]! >= before);
  });
});

suite('hook thread polling: the pool', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hloserve-hook-spin-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const x = (): HookTensors => ({ x: { dtype: 'f32', shape: [1, 3], data: new Float32Array([1, 2, 3]) } });
  const context = { model: 'm', requestId: 'r', parameters: {}, deadline: null };
  const pass = async (): Promise<string> => {
    const path = join(dir, 'pass.mjs');
    writeFileSync(path, 'export function preprocess(t) { return t; }\nexport function postprocess(t) { return t; }\n');
    return (await prepareHookSource({ path, language: 'js' }, join(dir, 'cache'))).url;
  };
  const call = (url: string, fn: HookCall['fn']): HookCall => ({ url, fn, tensors: x(), context, timeoutMs: 5_000 });

  test('a postprocess call that comes while the thread polls after the preprocess wakes nothing', async () => {
    // A poll that lasts and is never cut short, so that the order is certain on a loaded machine;
    // the first of its kind (no gap seen yet) lasts its whole cap.
    const spin: SpinLimits = { afterPreMs: 60_000, afterPostMs: 0, preemptedMs: Infinity };
    const pool = new HookPool({ threads: 1, maxQueued: 8, maxHeapMb: 64, name: 'spin', spin });
    try {
      const url = await pass();
      // The first call imports the module on the event loop: not a lone lane call, no poll after it.
      await pool.run(call(url, 'postprocess'));
      await pool.run(call(url, 'preprocess'));
      const w = pool.wakes;
      const out = await pool.run(call(url, 'postprocess'));
      assert.deepEqual([...(out.x!.data as Float32Array)], [1, 2, 3]);
      assert.equal(pool.wakes, w, 'the thread was polling: no notify');
    } finally {
      await pool.close();
    }
  });

  test('a postprocess call that comes after a timed sleep ended, while the thread polls, wakes nothing', async () => {
    // Gaps of ~30 ms: slept through to 25 ms before the gap is over, then polled for the rest.
    // Bounds wide enough that a loaded machine does not change the order.
    const spin: SpinLimits = {
      afterPreMs: 0.001,
      afterPostMs: 0,
      preemptedMs: Infinity,
      wakeBeforeMs: 25,
      wakeWithinMs: 60_000,
      wakePollMs: 60_000,
    };
    const pool = new HookPool({ threads: 1, maxQueued: 8, maxHeapMb: 64, name: 'timed', spin });
    const pause = (): Promise<void> => new Promise((r) => setTimeout(r, 30));
    try {
      const url = await pass();
      await pool.run(call(url, 'postprocess'));
      // The first lone preprocess polls its cap and runs out (its next poll is skipped); the
      // postprocess 30 ms later gives the gap; the second preprocess spends the skip.
      for (let i = 0; i < 2; i++) {
        await pool.run(call(url, 'preprocess'));
        await pause();
        await pool.run(call(url, 'postprocess'));
      }
      await pool.run(call(url, 'preprocess'));
      await pause();
      const w = pool.wakes;
      const out = await pool.run(call(url, 'postprocess'));
      assert.deepEqual([...(out.x!.data as Float32Array)], [1, 2, 3]);
      assert.equal(pool.wakes, w, 'the thread woke itself before the call: no notify');
    } finally {
      await pool.close();
    }
  });

  test('lone calls at every spacing, polled for or slept through, are all answered', async () => {
    const pool = new HookPool({ threads: 1, maxQueued: 8, maxHeapMb: 64, name: 'spacing' });
    try {
      const url = await pass();
      for (let i = 0; i < 60; i++) {
        const out = await pool.run(call(url, i % 2 ? 'postprocess' : 'preprocess'));
        assert.deepEqual([...(out.x!.data as Float32Array)], [1, 2, 3]);
        // None, a microtask's, a turn's and a timer's gap: each side of the poll's bound.
        if (i % 4 === 1) await new Promise((r) => setImmediate(r));
        if (i % 4 === 2) await new Promise((r) => setTimeout(r, 1));
      }
      assert.ok(pool.wakes <= pool.handoffs);
    } finally {
      await pool.close();
    }
  });
});
