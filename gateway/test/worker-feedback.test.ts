import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { DEFAULT_PLACEMENT, PlacementController } from '@hloserve/gateway/placement/placement-controller';
import { LoadEstimator } from '@hloserve/gateway/placement/load-estimator';
import { scaledWaterFill } from '@hloserve/gateway/placement/reweigh';
import { DEFAULT_FEEDBACK, WorkerFeedback, type FeedbackSettings } from '@hloserve/gateway/placement/worker-feedback';
import { DEFAULT_DEBT } from '@hloserve/gateway/placement/device-debt';
import { simulateFleet, type SimWindow } from '@hloserve/gateway/testing/fleet-sim';

const FEEDBACK: FeedbackSettings = DEFAULT_FEEDBACK;
// Three workers, the slowest taking 1.7x the nominal device time per unit of load; the bench's
// skew (one hot model with an operator's two replicas, one warm, a few cold).
const SPEED = new Map([
  ['w0', 1],
  ['w1', 1.3],
  ['w2', 1.7],
]);
const DEMAND = new Map([
  ['mlp', 1.6],
  ['fno', 0.9],
  ['resnet', 0.3],
  ['a', 0.1],
  ['b', 0.05],
]);
const controller = (gain: number, extra: Partial<typeof DEFAULT_PLACEMENT> = {}): PlacementController =>
  new PlacementController({
    ...DEFAULT_PLACEMENT,
    firstRebalanceComputeSeconds: 5,
    rebalanceComputeSeconds: 30,
    replicas: new Map([['mlp', 2]]),
    feedback: { ...FEEDBACK, gain },
    // Off means off: the debt's payback would level what the factors are here to learn.
    ...(gain > 0 ? {} : { debt: { ...DEFAULT_DEBT, gain: 0 } }),
    ...extra,
  });
const meanSpread = (ws: readonly SimWindow[]): number => ws.reduce((a, w) => a + w.spread, 0) / ws.length;

suite('feedback on measured device time (closed loop on a simulated fleet)', () => {
  test('workers of unequal speed: the measured spread converges to within 5 % of even', () => {
    const on = simulateFleet(controller(FEEDBACK.gain), { speed: SPEED, demand: DEMAND }, 40);
    const off = simulateFleet(controller(0), { speed: SPEED, demand: DEMAND }, 40);
    const tail = (ws: SimWindow[]) => meanSpread(ws.slice(-10));
    assert.ok(tail(on) < 1.05, `with feedback ${tail(on)}`);
    assert.ok(Math.max(...on.slice(-10).map((w) => w.spread)) < 1.05);
    // The same controller without it stays where the predicted shares put it.
    assert.ok(tail(off) > 1.05, `without feedback ${tail(off)}`);
    // Noisy windows (3 % per worker each window): still within 5 % on average.
    const noisy = simulateFleet(controller(FEEDBACK.gain), { speed: SPEED, demand: DEMAND, noise: 0.03 }, 60);
    assert.ok(meanSpread(noisy.slice(-20)) < 1.05, `noisy ${meanSpread(noisy.slice(-20))}`);
  });

  test('does not oscillate: once converged the weights and factors hold still', () => {
    const ctrl = controller(FEEDBACK.gain);
    const run = simulateFleet(ctrl, { speed: SPEED, demand: DEMAND }, 50);
    const stepsAt20 = ctrl.feedback.steps;
    for (let i = 31; i < run.length; i++) {
      for (const [m, p] of run[i]!.placement) {
        const q = run[i - 1]!.placement.get(m)!;
        assert.deepEqual(p.workers, q.workers, `${m} keeps its replicas in window ${i}`);
        p.weights.forEach((x, k) => assert.ok(Math.abs(x - q.weights[k]!) < 0.01, `${m} weight moved in window ${i}`));
      }
    }
    const again = simulateFleet(controller(FEEDBACK.gain), { speed: SPEED, demand: DEMAND }, 60);
    assert.ok(stepsAt20 > 0, 'the feedback acted');
    // Inside the dead band nothing moves: the spread is flat over the last windows.
    const last = again.slice(-20).map((w) => w.spread);
    assert.ok(Math.max(...last) - Math.min(...last) < 1e-6, last.join(', '));
  });

  test('a worker that is down is left out: its factors kept, the live ones evened out', () => {
    const ctrl = controller(FEEDBACK.gain);
    const factorsAt = new Map<number, number>();
    const run = simulateFleet(
      ctrl,
      {
        speed: SPEED,
        demand: DEMAND,
        down: (i) => {
          if (i === 15 || i === 29) factorsAt.set(i, ctrl.feedback.workerFactor('w2'));
          return i >= 15 && i < 30 ? new Set(['w2']) : new Set();
        },
      },
      60,
    );
    assert.equal(factorsAt.get(29), factorsAt.get(15), "the down worker's factor did not move");
    for (const w of run.slice(15, 30)) assert.equal(w.measured.has('w2'), false);
    assert.ok(meanSpread(run.slice(25, 30)) < 1.05, `live workers while w2 is down: ${meanSpread(run.slice(25, 30))}`);
    assert.ok(meanSpread(run.slice(-5)) < 1.05, `after it is back: ${meanSpread(run.slice(-5))}`);
  });

  test("memory caps, an operator's replica count and an operator's move are kept throughout", () => {
    const ctrl = controller(FEEDBACK.gain);
    ctrl.pin('fno', ['w0']);
    const weightBytes = new Map([...DEMAND.keys()].map((m) => [m, m === 'resnet' ? 600 : 100]));
    // resnet fits on w1 and w2 only beside what else they hold: never on w0 with a cap of 500.
    const memoryCap = new Map([
      ['w0', 500],
      ['w1', 1000],
      ['w2', 1000],
    ]);
    const run = simulateFleet(ctrl, { speed: SPEED, demand: DEMAND, weightBytes, memoryCap }, 40);
    for (const [i, w] of run.entries()) {
      if (i < 2) continue; // the startup guess, before memory is measured
      assert.equal(w.placement.get('mlp')!.workers.length, 2, `mlp on exactly two workers in window ${i}`);
      assert.deepEqual(w.placement.get('fno')!.workers, ['w0']);
      assert.deepEqual(w.placement.get('fno')!.weights, [1]);
      const held = new Map([...memoryCap.keys()].map((x) => [x, 0]));
      for (const [m, p] of w.placement) for (const x of p.workers) held.set(x, held.get(x)! + weightBytes.get(m)!);
      for (const [x, b] of held) assert.ok(b <= memoryCap.get(x)!, `${x} holds ${b} bytes in window ${i}`);
    }
  });
});

suite('feedback units', () => {
  test('a replica that costs more than its share gets a factor above 1; the window inside the dead band moves nothing', () => {
    const fb = new WorkerFeedback({ ...FEEDBACK, gain: 1, periodComputeSeconds: 1 });
    const inForce = new Map([['m', { workers: ['w0', 'w1'], weights: [0.5, 0.5] }]]);
    // Equal shares, w1 measured twice w0's device time.
    assert.equal(
      fb.observe(
        new Map([
          ['w0', new Map([['m', 2]])],
          ['w1', new Map([['m', 4]])],
        ]),
        inForce,
      ),
      true,
    );
    assert.ok(Math.abs(fb.replicaFactor('m', 'w1') / fb.replicaFactor('m', 'w0') - 2) < 1e-9);
    assert.ok(fb.workerFactor('w1') > fb.workerFactor('w0'));
    // Within the dead band (2 %) of even, from replicas and workers alike: nothing moves.
    const quiet = new WorkerFeedback({ ...FEEDBACK, gain: 1, periodComputeSeconds: 1 });
    assert.equal(
      quiet.observe(
        new Map([
          ['w0', new Map([['m', 3]])],
          ['w1', new Map([['m', 3.05]])],
        ]),
        inForce,
      ),
      false,
    );
    assert.equal(quiet.factor(), null);
  });

  test('a down worker (absent from the window) and a model on one worker are not measured', () => {
    const fb = new WorkerFeedback({ ...FEEDBACK, periodComputeSeconds: 1 });
    const inForce = new Map([
      ['m', { workers: ['w0', 'w1', 'w2'], weights: [0.4, 0.3, 0.3] }],
      ['solo', { workers: ['w0'], weights: [1] }],
    ]);
    fb.observe(
      new Map([
        [
          'w0',
          new Map([
            ['m', 1],
            ['solo', 5],
          ]),
        ],
        ['w1', new Map([['m', 3]])],
      ]),
      inForce,
    );
    assert.equal(fb.replicaFactor('m', 'w2'), 1);
    assert.equal(fb.workerFactor('w2'), 1);
    assert.equal(fb.replicaFactors().has('solo'), false);
    // The live replicas' shares are renormalised as the router sends them: 4/7 and 3/7 of 4.
    assert.ok(fb.replicaFactor('m', 'w0') < 1 && fb.replicaFactor('m', 'w1') > 1);
  });

  test('factors stay within the clamp, and a group of workers that cannot even out does not wind up', () => {
    const fb = new WorkerFeedback({ ...FEEDBACK, gain: 1, periodComputeSeconds: 1 });
    const inForce = new Map([
      ['hot', { workers: ['w1', 'w2'], weights: [0.5, 0.5] }],
      ['cold', { workers: ['w0'], weights: [1] }],
    ]);
    for (let i = 0; i < 50; i++)
      fb.observe(
        new Map([
          ['w0', new Map([['cold', 1]])],
          ['w1', new Map([['hot', 5]])],
          ['w2', new Map([['hot', 5]])],
        ]),
        inForce,
      );
    // w1 and w2 are both heavier than w0, but nothing they share can move there: no factor.
    assert.equal(fb.workerFactor('w0'), 1);
    assert.equal(fb.workerFactor('w1'), 1);
    assert.equal(fb.workerFactor('w2'), 1);
    for (let i = 0; i < 50; i++)
      fb.observe(
        new Map([
          ['w1', new Map([['hot', 100]])],
          ['w2', new Map([['hot', 0.001]])],
        ]),
        inForce,
      );
    assert.ok(fb.workerFactor('w1') <= 4 && fb.workerFactor('w2') >= 0.25);
    assert.ok(fb.replicaFactor('hot', 'w1') <= 4);
  });

  test("a worker holding only whole models that measures above its estimate scales those models' estimates", () => {
    const fb = new WorkerFeedback({ ...FEEDBACK, periodComputeSeconds: 1 });
    const inForce = new Map([
      ['hot', { workers: ['w1', 'w2'], weights: [0.5, 0.5] }],
      ['x', { workers: ['w0'], weights: [1] }],
      ['y', { workers: ['w0'], weights: [1] }],
    ]);
    // Estimated: x + y = a third of the fleet. Measured: w0 did half of it (x and y contending).
    const u = new Map([
      ['hot', 2],
      ['x', 0.5],
      ['y', 0.5],
    ]);
    fb.observe(
      new Map([
        [
          'w0',
          new Map([
            ['x', 2],
            ['y', 2],
          ]),
        ],
        ['w1', new Map([['hot', 2]])],
        ['w2', new Map([['hot', 2]])],
      ]),
      inForce,
      u,
    );
    assert.ok(fb.modelScale('x') > 1.1 && fb.modelScale('y') === fb.modelScale('x'), `${fb.modelScale('x')}`);
    // The split model's workers are a group: the re-weigh's to even, not a scale.
    assert.equal(fb.modelScale('hot'), 1);
  });

  test('the scaled water-fill levels base + factor x share', () => {
    const base = new Map([
      ['a', 1],
      ['b', 0],
    ]);
    const f = new Map([
      ['a', 1],
      ['b', 2],
    ]);
    const s = scaledWaterFill(
      3,
      ['a', 'b'],
      (w) => base.get(w)!,
      (w) => f.get(w)!,
    );
    const level = (w: string) => base.get(w)! + f.get(w)! * s.get(w)!;
    assert.ok(Math.abs(s.get('a')! + s.get('b')! - 3) < 1e-9);
    assert.ok(Math.abs(level('a') - level('b')) < 1e-6, `${level('a')} ${level('b')}`);
  });

  test('the load estimate counts a quiet tail as much as a busy phase: shares of the work done', () => {
    const e = new LoadEstimator(300);
    const poll = (a: number, b: number) =>
      new Map([
        [
          'w0',
          new Map([
            ['a', { requests: a * 100, computeSeconds: a, weightBytes: 1 }],
            ['b', { requests: b * 100, computeSeconds: b, weightBytes: 1 }],
          ]),
        ],
      ]);
    e.observe(poll(0, 0), 0);
    // A busy window (a 8 device-s, b 1) then b alone running on (1 device-s) for three windows.
    e.observe(poll(8, 1), 5000);
    for (let i = 2; i <= 4; i++) e.observe(poll(8, i), i * 5000);
    const u = e.utilisation(['a', 'b']);
    // b did 4 of the 12 device-seconds: a third of the load, whatever phase it ran in.
    assert.ok(Math.abs(u.get('b')! / (u.get('a')! + u.get('b')!) - 4 / 12) < 0.01, `${u.get('a')} ${u.get('b')}`);
  });
});
