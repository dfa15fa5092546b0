import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { DEFAULT_DEBT, DeviceDebt } from '@hloserve/gateway/placement/device-debt';
import { DEFAULT_PLACEMENT, PlacementController } from '@hloserve/gateway/placement/placement-controller';
import type { ModelPlacement } from '@hloserve/gateway/placement/lpt-packing';
import { simulateFleet, type SimFleet, type SimWindow } from '@hloserve/gateway/testing/fleet-sim';

const window = (rows: Record<string, Record<string, number>>): Map<string, Map<string, number>> =>
  new Map(Object.entries(rows).map(([w, ms]) => [w, new Map(Object.entries(ms))]));
const placed = (rows: Record<string, [string[], number[]]>): Map<string, ModelPlacement> =>
  new Map(Object.entries(rows).map(([m, [workers, weights]]) => [m, { workers, weights }]));

// The measured bench's mix on three equal workers (bench/gateway.mjs): mlp with an operator's two
// replicas, fno split, resnet whole; a replica's cost rising with its share (batching).
const MIX: SimFleet = {
  speed: new Map(['w0', 'w1', 'w2'].map((w) => [w, 1])),
  demand: new Map([
    ['mlp', 0.7],
    ['fno', 0.6],
    ['resnet', 0.08],
  ]),
  batching: new Map([
    ['mlp', 0.5],
    ['fno', 1],
    ['resnet', 0],
  ]),
  noise: 0.02,
};
const RUN = 15;
const controller = (gain: number, extra: Partial<typeof DEFAULT_PLACEMENT> = {}): PlacementController =>
  new PlacementController({
    ...DEFAULT_PLACEMENT,
    firstRebalanceComputeSeconds: 5,
    rebalanceComputeSeconds: 30,
    replicas: new Map([['mlp', 2]]),
    debt: { ...DEFAULT_DEBT, gain },
    ...extra,
  });
/** max / mean of each worker's device time summed over runs of RUN one-second windows. */
const runSpreads = (ws: readonly SimWindow[], from: number): number[] => {
  const out: number[] = [];
  for (let i = from; i + RUN <= ws.length; i += RUN) {
    const tot = new Map<string, number>();
    for (const w of ws.slice(i, i + RUN)) for (const [k, x] of w.measured) tot.set(k, (tot.get(k) ?? 0) + x);
    const v = [...tot.values()];
    out.push(Math.max(...v) / (v.reduce((a, b) => a + b, 0) / v.length));
  }
  return out;
};
const setChanges = (ws: readonly SimWindow[]): number =>
  ws
    .slice(1)
    .filter((w, i) => [...w.placement].some(([m, p]) => p.workers.join() !== ws[i]!.placement.get(m)?.workers.join()))
    .length;

suite('device debt: each worker pays back its measured excess through split weights', () => {
  test("a worker's debt is its excess over its group's mean; a worker in no group carries none", () => {
    const d = new DeviceDebt(DEFAULT_DEBT);
    // w0-w1 joined by fno, w2 alone (resnet only).
    const inForce = placed({
      fno: [
        ['w0', 'w1'],
        [0.5, 0.5],
      ],
      resnet: [['w2'], [1]],
    });
    d.observe(window({ w0: { fno: 3 }, w1: { fno: 1 }, w2: { resnet: 5 } }), inForce);
    assert.ok(Math.abs(d.of('w0') - 1) < 1e-9, `w0 ${d.of('w0')}`);
    assert.ok(Math.abs(d.of('w1') + 1) < 1e-9);
    assert.equal(d.of('w2'), 0);
    // The next window: the old debt fades by the work done, the new excess adds to it.
    d.observe(window({ w0: { fno: 2 }, w1: { fno: 2 }, w2: { resnet: 5 } }), inForce);
    const after = 2 ** (-9 / DEFAULT_DEBT.halflifeComputeSeconds);
    assert.ok(Math.abs(d.of('w0') - after) < 1e-9, `w0 ${d.of('w0')}`);
    assert.ok(Math.abs(d.of('w0') + d.of('w1')) < 1e-9, 'sums to zero over the group');
    // An idle window changes nothing.
    d.observe(window({ w0: {}, w1: {}, w2: {} }), inForce);
    assert.ok(Math.abs(d.of('w0') - after) < 1e-9);
  });

  test('the charge is the gain x debt as a share of a window, capped; off or nothing owed: none', () => {
    const d = new DeviceDebt({ ...DEFAULT_DEBT, halflifeComputeSeconds: 0, limit: 0.1 });
    assert.equal(d.charge(new Map([['fno', 1]]), ['w0', 'w1']), null, 'nothing owed');
    const inForce = placed({
      fno: [
        ['w0', 'w1'],
        [0.5, 0.5],
      ],
    });
    d.observe(window({ w0: { fno: 2.2 }, w1: { fno: 1.8 } }), inForce);
    const u = new Map([['fno', 2]]);
    const c = d.charge(u, ['w0', 'w1'])!;
    // Debt 0.2 of a 4 s window, times the fleet's load of 2, times the gain.
    assert.ok(Math.abs(c('w0') - DEFAULT_DEBT.gain * (0.2 / 4) * 2) < 1e-9, `w0 ${c('w0')}`);
    assert.ok(Math.abs(c('w1') + c('w0')) < 1e-9);
    d.observe(window({ w0: { fno: 4 }, w1: { fno: 0 } }), inForce);
    const capped = d.charge(u, ['w0', 'w1'])!;
    assert.equal(capped('w0'), (0.1 * 2) / 2);
    assert.equal(capped('w1'), -(0.1 * 2) / 2);
    const off = new DeviceDebt({ ...DEFAULT_DEBT, gain: 0 });
    off.observe(window({ w0: { fno: 3 }, w1: { fno: 1 } }), inForce);
    assert.equal(off.charge(u, ['w0', 'w1']), null);
  });

  test('a run whose mix moves: every run within 5 % of even with the payback, not without', () => {
    // Each model's cost moves by up to ±20 % for a run of RUN windows, alike on every worker: the
    // measured runs' mlp-over-fno moves.
    const fleet = { ...MIX, modelNoise: 0.2, modelNoiseWindows: RUN };
    const on = runSpreads(simulateFleet(controller(DEFAULT_DEBT.gain), fleet, 40 * RUN, 1000, 3), 10 * RUN);
    const off = runSpreads(simulateFleet(controller(0), fleet, 40 * RUN, 1000, 3), 10 * RUN);
    assert.ok(Math.max(...on) <= 1.05, `with the payback, worst run ${Math.max(...on)}`);
    assert.ok(off.filter((x) => x > 1.05).length >= off.length / 4, `without, ${off.map((x) => x.toFixed(3))}`);
  });

  test('models without traffic (left without replicas) do not stop the re-weigh between repacks', () => {
    const demand = new Map([...MIX.demand, ['detector', 0], ['grader', 0]]);
    const ctrl = controller(DEFAULT_DEBT.gain);
    const fleet = { ...MIX, demand, modelNoise: 0.2, modelNoiseWindows: RUN };
    const ws = simulateFleet(ctrl, fleet, 40 * RUN, 1000, 3);
    assert.ok(ctrl.reweighs > ctrl.repacks, `reweighs ${ctrl.reweighs}, repacks ${ctrl.repacks}`);
    const on = runSpreads(ws, 10 * RUN);
    assert.ok(Math.max(...on) <= 1.05, `worst run ${Math.max(...on)}`);
    for (const w of ws.slice(-RUN)) assert.deepEqual(w.placement.get('detector'), { workers: [], weights: [] });
  });

  test('no flapping: the payback moves weights only, never replica sets, and holds still when level', () => {
    const fleet = { ...MIX, modelNoise: 0.2, modelNoiseWindows: RUN };
    const on = simulateFleet(controller(DEFAULT_DEBT.gain), fleet, 40 * RUN, 1000, 3);
    const off = simulateFleet(controller(0), fleet, 40 * RUN, 1000, 3);
    assert.equal(setChanges(on), setChanges(off));
    // Without noise, once level the weights stop moving.
    const quiet = simulateFleet(controller(DEFAULT_DEBT.gain), MIX, 200, 1000, 3);
    for (let i = 150; i < quiet.length; i++)
      for (const [m, p] of quiet[i]!.placement) {
        const q = quiet[i - 1]!.placement.get(m)!;
        p.weights.forEach((x, k) => assert.ok(Math.abs(x - q.weights[k]!) < 0.01, `${m} weight moved in window ${i}`));
      }
  });

  test('a worker that cannot shed (only standbys) keeps no debt; a standby still joins its group', () => {
    const d = new DeviceDebt(DEFAULT_DEBT);
    // w0 holds fno whole and a resnet standby; mlp joins w1 and w2.
    const inForce = placed({
      fno: [['w0'], [1]],
      resnet: [
        ['w1', 'w0'],
        [1, 0],
      ],
      mlp: [
        ['w1', 'w2'],
        [0.5, 0.5],
      ],
    });
    d.observe(window({ w0: { fno: 4 }, w1: { mlp: 1.2, resnet: 0.3 }, w2: { mlp: 1.5 } }), inForce);
    assert.equal(d.of('w0'), 0);
    assert.ok(Math.abs(d.of('w1') - d.of('w2')) < 1e-9, 'w1 and w2 did the same: charged alike');
    // A weight driven to zero keeps its worker in the group: the debt can bring it back.
    const zero = placed({
      mlp: [
        ['w1', 'w2'],
        [1, 0],
      ],
    });
    const e = new DeviceDebt(DEFAULT_DEBT);
    e.observe(window({ w1: { mlp: 3 }, w2: {} }), zero);
    assert.ok(e.of('w1') > 0 && e.of('w2') < 0, `w1 ${e.of('w1')}, w2 ${e.of('w2')}`);
  });

  test('eight workers of unequal speed with the spread trigger: joins bounded, sets still once level', () => {
    let seed = 15;
    const rnd = (): number => ((seed = (seed * 16807) % 2147483647) - 1) / 2147483646;
    const workers = Array.from({ length: 8 }, (_, i) => `w${String(i).padStart(2, '0')}`);
    const speed = new Map(workers.map((w) => [w, 0.7 + 0.6 * rnd()]));
    const demand = new Map(Array.from({ length: 64 }, (_, i) => [`m${i}`, 4 / (i + 1) / Math.log(64)]));
    const mean = [...demand.values()].reduce((a, b) => a + b, 0) / 8;
    const replicas = new Map(
      [...demand].filter(([, x]) => x > mean * 0.5).map(([m, x]) => [m, Math.min(8, Math.ceil((2 * x) / mean))]),
    );
    const ctrl = (): PlacementController =>
      new PlacementController({
        ...DEFAULT_PLACEMENT,
        firstRebalanceComputeSeconds: 5,
        rebalanceComputeSeconds: 30,
        replicas,
      });
    const quiet = ctrl();
    const run = simulateFleet(quiet, { speed, demand }, 80);
    assert.equal(setChanges(run.slice(40)), 0, 'no set changes in the last 40 windows');
    const noisy = ctrl();
    const ws = simulateFleet(noisy, { speed, demand, noise: 0.03 }, 120);
    assert.ok(noisy.joins <= 5, `joins under noise ${noisy.joins}`);
    // Cumulative device time over the last 40 windows: level within 5 %.
    const tot = new Map<string, number>();
    for (const w of ws.slice(-40)) for (const [k, x] of w.measured) tot.set(k, (tot.get(k) ?? 0) + x);
    const v = [...tot.values()];
    const spread = Math.max(...v) / (v.reduce((a, b) => a + b, 0) / v.length);
    assert.ok(spread <= 1.05, `spread over 40 windows ${spread}`);
  });

  test("an operator's move is never re-weighed by the debt", () => {
    const ctrl = controller(DEFAULT_DEBT.gain);
    ctrl.pin('fno', ['w0', 'w1']);
    const run = simulateFleet(ctrl, { ...MIX, modelNoise: 0.2, modelNoiseWindows: RUN }, 10 * RUN, 1000, 3);
    for (const w of run.slice(5))
      assert.deepEqual(w.placement.get('fno'), { workers: ['w0', 'w1'], weights: [0.5, 0.5] });
  });
});
