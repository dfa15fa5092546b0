import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { Router } from '@hloserve/gateway/routing/router';
import { LoadEstimator } from '@hloserve/gateway/placement/load-estimator';
import { PlacementController, DEFAULT_PLACEMENT } from '@hloserve/gateway/placement/placement-controller';

const W = ['w0', 'w1', 'w2'];

suite('routing modes', () => {
  test('round_robin rotates per model and returns the rest as failover order', () => {
    const r = new Router('round_robin');
    const first = [0, 1, 2, 3].map(() => r.route('m', 1, W)!.order);
    assert.deepEqual(
      first.map((o) => o[0]),
      ['w0', 'w1', 'w2', 'w0'],
    );
    assert.deepEqual(first[0], ['w0', 'w1', 'w2']);
    assert.deepEqual(first[1], ['w1', 'w2', 'w0']);
    assert.deepEqual(first[2], ['w2', 'w0', 'w1']);
    assert.deepEqual(first[3], ['w0', 'w1', 'w2']);
    // One holder: the same order every call.
    assert.deepEqual(
      [0, 1, 2].map(() => r.route('solo', 1, ['w1'])!.order),
      [['w1'], ['w1'], ['w1']],
    );
    assert.equal(r.route('other', 1, W)!.order[0], 'w0');
    assert.equal(r.route('m', 1, [])?.order, undefined);
  });

  test('least_outstanding picks the worker with the fewest items in flight, ties by name', () => {
    const r = new Router('least_outstanding');
    const a = r.route('m', 4, W)!;
    const b = r.route('n', 1, W)!;
    const c = r.route('m', 1, W)!;
    assert.deepEqual([a.order[0], b.order[0], c.order[0]], ['w0', 'w1', 'w2']);
    a.release();
    assert.equal(r.route('m', 1, W)!.order[0], 'w0');
  });

  test('lpt_packing routes a placed model to its replicas, a replica that is down goes last', () => {
    const r = new Router('lpt_packing', { mode: 'spread', policy: 'fill_rr', factor: 1 });
    r.setPlacement(new Map([['m', { workers: ['w1', 'w2'], weights: [0.5, 0.5] }]]), new Map([['m', 4]]));
    const got = [0, 1, 2, 3].map(() => r.route('m', 1, W)!.order[0]);
    assert.deepEqual(got.sort(), ['w1', 'w1', 'w2', 'w2']);
    const down = r.route('m', 1, ['w0', 'w2'])!.order;
    assert.deepEqual(down, ['w2', 'w0', 'w1']);
    // An unplaced model rotates over the workers that hold it.
    assert.equal(r.route('u', 1, W)!.order[0], 'w0');
  });
});

suite('measured load', () => {
  const sample = (entries: [string, string, number, number][]) => {
    const out = new Map<string, Map<string, { requests: number; computeSeconds: number; weightBytes: number }>>();
    for (const [w, m, requests, computeSeconds] of entries) {
      if (!out.has(w)) out.set(w, new Map());
      out.get(w)!.set(m, { requests, computeSeconds, weightBytes: 100 });
    }
    return out;
  };

  test('utilisation = rate x cost per request, summed over workers; restarts re-baseline', () => {
    const e = new LoadEstimator(300);
    e.observe(
      sample([
        ['w0', 'a', 0, 0],
        ['w1', 'a', 0, 0],
        ['w0', 'b', 0, 0],
      ]),
      0,
    );
    const dt = e.observe(
      sample([
        ['w0', 'a', 50, 1],
        ['w1', 'a', 50, 1],
        ['w0', 'b', 10, 0.1],
      ]),
      10_000,
    );
    assert.ok(Math.abs(dt - 2.1) < 1e-9);
    const u = e.utilisation(['a', 'b', 'c']);
    assert.ok(Math.abs(u.get('a')! - 10 * 0.02) < 1e-9); // 100 req / 10 s x 20 ms
    assert.ok(Math.abs(u.get('b')! - 1 * 0.01) < 1e-9);
    assert.equal(u.get('c'), 0);
    // w1 restarted: its counters went down; no negative sample.
    e.observe(
      sample([
        ['w0', 'a', 50, 1],
        ['w1', 'a', 1, 0.02],
        ['w0', 'b', 10, 0.1],
      ]),
      20_000,
    );
    assert.ok(e.utilisation(['a']).get('a')! >= 0);
  });

  test('load is compute over wall time, a ratio of discounted sums: windows count by the time they took', () => {
    const e = new LoadEstimator(300);
    e.observe(sample([['w0', 'a', 0, 0]]), 0);
    // A cold first window: few requests, each slow (weights loading); then the steady state.
    e.observe(sample([['w0', 'a', 10, 5]]), 5000);
    e.observe(sample([['w0', 'a', 1010, 10]]), 10_000);
    // Both windows did 5 device-seconds in 5 s: the load is 1, whatever the rate and cost apart.
    assert.ok(Math.abs(e.utilisation(['a']).get('a')! - 1) < 1e-9);
    e.observe(sample([['w0', 'a', 1020, 20]]), 15_000);
    // A third window at twice the load, as much compute as the first two together: 20 device-s
    // in 15 s, less the old windows' slight decay.
    const u = e.utilisation(['a']).get('a')!;
    assert.ok(u > 1.3 && u < 1.6, `u ${u}`);
  });

  test('before any traffic, models spread evenly by count; replicas take distinct workers', () => {
    const c = new PlacementController({ ...DEFAULT_PLACEMENT, replicas: new Map([['a', 2]]) });
    const p = c.startup(['a', 'b', 'c', 'd'], ['w0', 'w1', 'w2'], new Map());
    assert.deepEqual(p.placement.get('a')!.workers, ['w0', 'w1']);
    const singles = ['b', 'c', 'd'].map((m) => p.placement.get(m)!.workers[0]);
    assert.deepEqual(singles, ['w2', 'w0', 'w1']);
    assert.deepEqual([...p.computeLoad.values()], [1.5, 1.5, 1]);
  });

  test('the controller repacks after enough fleet compute, never on an idle fleet', () => {
    const c = new PlacementController({
      ...DEFAULT_PLACEMENT,
      firstRebalanceComputeSeconds: 1,
      rebalanceComputeSeconds: 5,
    });
    const caps = new Map<string, number>();
    assert.equal(
      c.tick(
        sample([
          ['w0', 'a', 0, 0],
          ['w0', 'b', 0, 0],
        ]),
        0,
        ['a', 'b'],
        ['w0', 'w1'],
        caps,
      ),
      null,
    );
    assert.equal(
      c.tick(
        sample([
          ['w0', 'a', 0, 0],
          ['w0', 'b', 0, 0],
        ]),
        1000,
        ['a', 'b'],
        ['w0', 'w1'],
        caps,
      ),
      null,
    );
    // Enough compute in the first window with traffic, but the first packing waits for a second.
    assert.equal(
      c.tick(
        sample([
          ['w0', 'a', 50, 0.5],
          ['w0', 'b', 50, 0.25],
        ]),
        1500,
        ['a', 'b'],
        ['w0', 'w1'],
        caps,
      ),
      null,
    );
    const p = c.tick(
      sample([
        ['w0', 'a', 100, 1],
        ['w0', 'b', 100, 0.5],
      ]),
      2000,
      ['a', 'b'],
      ['w0', 'w1'],
      caps,
    );
    assert.ok(p);
    // a (1 device-s/s) is over the even share 0.75: three quarters of it on w0, the rest beside b.
    assert.deepEqual(p.placement.get('a')!.workers, ['w0', 'w1']);
    assert.deepEqual(
      p.placement.get('a')!.weights.map((w) => Math.round(w * 1000) / 1000),
      [0.75, 0.25],
    );
    assert.deepEqual(p.placement.get('b')!.workers, ['w1']);
    // The next repack needs the larger budget; until then the same replicas are only re-weighed.
    const between = c.tick(
      sample([
        ['w0', 'a', 200, 2],
        ['w0', 'b', 200, 1],
      ]),
      3000,
      ['a', 'b'],
      ['w0', 'w1'],
      caps,
    );
    assert.equal(c.repacks, 1);
    assert.equal(c.reweighs, 1);
    assert.deepEqual(between?.placement.get('a')!.workers, ['w0', 'w1']);
    assert.deepEqual(between?.placement.get('b')!.workers, ['w1']);
  });

  test('a traffic repack keeps the replica sets when re-weighing them is within the hysteresis', () => {
    const c = new PlacementController({
      ...DEFAULT_PLACEMENT,
      firstRebalanceComputeSeconds: 1,
      rebalanceComputeSeconds: 4,
      replicas: new Map([['mlp', 2]]),
    });
    const W3 = ['w0', 'w1', 'w2'];
    const models = ['mlp', 'fno', 'resnet'];
    const cum = new Map(models.map((m) => [m, { requests: 0, computeSeconds: 0 }]));
    const step = (t: number, rates: Record<string, [number, number]>) => {
      for (const [m, [rate, cost]] of Object.entries(rates)) {
        const x = cum.get(m)!;
        x.requests += rate * 5;
        x.computeSeconds += rate * 5 * cost;
      }
      const one = new Map([...cum].map(([m, x]) => [m, { ...x, weightBytes: 1 }]));
      return c.tick(new Map([['w0', one]]), t, models, W3, new Map());
    };
    step(0, {});
    step(5000, { mlp: [57, 0.01], fno: [3.6, 0.1], resnet: [0.7, 0.1] });
    assert.equal(c.repacks, 0, 'the first window alone is not packed on');
    const first = step(10_000, { mlp: [57, 0.01], fno: [3.6, 0.1], resnet: [0.7, 0.1] })!;
    assert.equal(c.repacks, 1);
    const sets = (r: { placement: ReadonlyMap<string, { workers: readonly string[] }> }) =>
      models.map((m) => [...r.placement.get(m)!.workers].sort().join(','));
    // The mix moves (fno hotter): the next repack re-weighs the replicas it has instead of moving them.
    let last = first;
    for (let t = 15_000; c.repacks < 2; t += 5000)
      last = step(t, { mlp: [40, 0.01], fno: [5, 0.1], resnet: [0.7, 0.1] })!;
    assert.deepEqual(sets(last), sets(first));
    const loads = [...last.computeLoad.values()];
    const mean = loads.reduce((a, b) => a + b, 0) / 3;
    assert.ok(Math.max(...loads) / mean < 1.1, `within the hysteresis: ${loads.join(', ')}`);
  });
});
