import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { DEFAULT_PLACEMENT, PlacementController } from '@hloserve/gateway/placement/placement-controller';
import { DEFAULT_FEEDBACK, WorkerFeedback } from '@hloserve/gateway/placement/worker-feedback';
import { DEFAULT_SPREAD_TRIGGER, SpreadTrigger } from '@hloserve/gateway/placement/spread-trigger';
import { DEFAULT_DEBT } from '@hloserve/gateway/placement/device-debt';
import { simulateFleet, type SimFleet, type SimWindow } from '@hloserve/gateway/testing/fleet-sim';

const window = (loads: Record<string, number>) =>
  new Map(Object.entries(loads).map(([w, x]) => [w, new Map([['m', x]])]));
const W3 = ['w0', 'w1', 'w2'];

suite('spread trigger', () => {
  test('fires once a span closes above the threshold, not before, and not inside the cooldown', () => {
    const t = new SpreadTrigger({ threshold: 0.05, spanComputeSeconds: 10, cooldownComputeSeconds: 20 });
    // 6 device-s: the span is open.
    assert.equal(t.observe(window({ w0: 3, w1: 2, w2: 1 }), W3), false);
    // 12 device-s, but the cooldown (20 since the last repack, here since the start) is not over.
    assert.equal(t.observe(window({ w0: 3, w1: 2, w2: 1 }), W3), false);
    assert.ok(Math.abs(t.lastSpread - 1.5) < 1e-9, `${t.lastSpread}`);
    assert.equal(t.observe(window({ w0: 6, w1: 4, w2: 2 }), W3), true);
    assert.equal(t.fired, 1);
    t.repacked();
    assert.equal(t.observe(window({ w0: 6, w1: 4, w2: 2 }), W3), false, 'cooldown after a repack');
    assert.equal(t.observe(window({ w0: 6, w1: 4, w2: 2 }), W3), true, '24 device-s since');
  });

  test('within the threshold, or off, it never fires', () => {
    const t = new SpreadTrigger({ ...DEFAULT_SPREAD_TRIGGER, cooldownComputeSeconds: 0 });
    for (let i = 0; i < 10; i++) assert.equal(t.observe(window({ w0: 5.2, w1: 5, w2: 4.9 }), W3), false);
    assert.ok(t.lastSpread > 1 && t.lastSpread < 1.05);
    const off = new SpreadTrigger({ ...DEFAULT_SPREAD_TRIGGER, threshold: 0, cooldownComputeSeconds: 0 });
    for (let i = 0; i < 10; i++) assert.equal(off.observe(window({ w0: 9, w1: 1, w2: 1 }), W3), false);
  });

  test('a worker absent from a window of the span (down, restarted) is not compared', () => {
    const t = new SpreadTrigger({ threshold: 0.05, spanComputeSeconds: 10, cooldownComputeSeconds: 0 });
    t.observe(window({ w0: 3, w1: 3 }), W3);
    assert.equal(t.observe(window({ w0: 3, w1: 3, w2: 0.1 }), W3), false);
    assert.deepEqual([...t.lastLoads.keys()], ['w0', 'w1']);
  });
});

// Eight workers of unequal speed, Zipf demand over 64 models, the hottest three with an
// operator's count: the split models join the workers into three groups, between which no
// re-weigh can move work (the bench's closed-loop case, where session 12 stopped at 1.063).
function eightWorkers(): { fleet: SimFleet; replicas: Map<string, number> } {
  let seed = 15;
  const rnd = () => ((seed = (seed * 16807) % 2147483647) - 1) / 2147483646;
  const workers = Array.from({ length: 8 }, (_, i) => `w${String(i).padStart(2, '0')}`);
  const speed = new Map(workers.map((w) => [w, 0.7 + 0.6 * rnd()]));
  const demand = new Map(Array.from({ length: 64 }, (_, i) => [`m${i}`, 4 / (i + 1) / Math.log(64)]));
  const mean = [...demand.values()].reduce((a, b) => a + b, 0) / 8;
  const replicas = new Map(
    [...demand].filter(([, x]) => x > mean * 0.5).map(([m, x]) => [m, Math.min(8, Math.ceil((2 * x) / mean))]),
  );
  return { fleet: { speed, demand, noise: 0.03 }, replicas };
}
const controller = (replicas: Map<string, number>, threshold: number): PlacementController =>
  new PlacementController({
    ...DEFAULT_PLACEMENT,
    firstRebalanceComputeSeconds: 5,
    rebalanceComputeSeconds: 30,
    replicas,
    spreadTrigger: { ...DEFAULT_SPREAD_TRIGGER, threshold },
    // The trigger alone: the debt's payback (device-debt.test.ts) re-weighs within groups.
    debt: { ...DEFAULT_DEBT, gain: 0 },
  });
const mean = (ws: readonly SimWindow[]): number => ws.reduce((a, w) => a + w.spread, 0) / ws.length;
/** Models whose replica set differs from the window before, summed over windows. */
const setChanges = (ws: readonly SimWindow[]): number => {
  let n = 0;
  for (let i = 1; i < ws.length; i++)
    for (const [m, p] of ws[i]!.placement) if (p.workers.join() !== ws[i - 1]!.placement.get(m)?.workers.join()) n++;
  return n;
};

suite('the measured spread joins groups of workers (closed loop)', () => {
  test('eight workers in three groups: one replica added per join brings the spread within 5 %', () => {
    const { fleet, replicas } = eightWorkers();
    const on = controller(replicas, DEFAULT_SPREAD_TRIGGER.threshold);
    const withJoins = simulateFleet(on, fleet, 60);
    const without = simulateFleet(controller(replicas, 0), fleet, 60);
    assert.ok(mean(withJoins.slice(-20)) < 1.05, `with the trigger ${mean(withJoins.slice(-20))}`);
    assert.ok(mean(without.slice(-20)) > 1.05, `without ${mean(without.slice(-20))}`);
    assert.ok(on.joins >= 1 && on.joins <= 3, `joins ${on.joins}`);
    // Each join adds one replica of a model at the default count; the operator's counts hold.
    for (const w of withJoins.slice(2))
      for (const [m, n] of replicas) assert.equal(w.placement.get(m)!.workers.length, n, `${m}'s count`);
  });

  test('no flapping: under stable load the replica sets stop changing once joined', () => {
    const { fleet, replicas } = eightWorkers();
    const ctrl = controller(replicas, DEFAULT_SPREAD_TRIGGER.threshold);
    const run = simulateFleet(ctrl, { ...fleet, noise: 0 }, 80);
    const joinsAt40 = ctrl.joins;
    assert.equal(setChanges(run.slice(40)), 0, 'no set changes in the last 40 windows');
    assert.equal(ctrl.joins, joinsAt40);
    // With 3 % noise per window the trigger fires now and then, but joins stay bounded.
    const noisy = controller(replicas, DEFAULT_SPREAD_TRIGGER.threshold);
    simulateFleet(noisy, fleet, 120);
    assert.ok(noisy.joins <= 3, `joins under noise ${noisy.joins}`);
  });

  test('a join never lands where the weights do not fit, nor on a pinned model', () => {
    const { fleet, replicas } = eightWorkers();
    // Every worker's cap is what the startup packing gives it, plus nothing: no room to join.
    const weightBytes = new Map([...fleet.demand.keys()].map((m) => [m, 100]));
    const memoryCap = new Map([...fleet.speed.keys()].map((w) => [w, 100 * 9]));
    const ctrl = controller(replicas, DEFAULT_SPREAD_TRIGGER.threshold);
    ctrl.pin('m10', ['w00']);
    const run = simulateFleet(ctrl, { ...fleet, weightBytes, memoryCap }, 60);
    for (const [i, w] of run.entries()) {
      if (i < 2) continue;
      assert.deepEqual(w.placement.get('m10')!.workers, ['w00']);
      const held = new Map([...memoryCap.keys()].map((x) => [x, 0]));
      for (const p of w.placement.values()) for (const x of p.workers) held.set(x, held.get(x)! + 100);
      for (const [x, b] of held) assert.ok(b <= memoryCap.get(x)!, `${x} holds ${b} bytes in window ${i}`);
    }
  });
});

suite('the feedback on the measured spread', () => {
  test('a span over the threshold closes the feedback period early', () => {
    const inForce = new Map([['m', { workers: ['w0', 'w1'], weights: [0.5, 0.5] }]]);
    const w = new Map([
      ['w0', new Map([['m', 1.2]])],
      ['w1', new Map([['m', 0.8]])],
    ]);
    // 2 device-s of a 15 device-s period: nothing yet, unless the spread says a correction is due.
    const waiting = new WorkerFeedback(DEFAULT_FEEDBACK);
    assert.equal(waiting.observe(w, inForce), false);
    const closed = new WorkerFeedback(DEFAULT_FEEDBACK);
    assert.equal(closed.observe(w, inForce, undefined, true), true);
    assert.ok(closed.workerFactor('w0') > 1 && closed.workerFactor('w1') < 1);
  });
});
