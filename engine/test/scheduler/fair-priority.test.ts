import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { CostTable, DEFAULT_COST_SECONDS, updateCostEma } from '../../src/scheduler/cost-estimate.js';
import { effectiveCost, fairPriority } from '../../src/scheduler/fair-priority.js';
import { RecencyLedger, decayEma, decayFactor } from '../../src/scheduler/recency-ema.js';

const close = (actual: number, expected: number, tol: number): void =>
  assert.ok(Math.abs(actual - expected) <= tol, `${actual} is not within ${tol} of ${expected}`);

suite('fair priority (reference §2.3 vectors)', () => {
  test('worked example: 3 equal weights, EMAs 0.7/0.2/0.1, cap 0.25, discount 0.1, costs 10/30/100 ms', () => {
    const share = 1 / 3;
    const cap = 0.25;
    const discount = 0.1;
    // The example coalesces (every candidate gets the discount), costs in ms.
    const p = [
      fairPriority(share, 0.7, cap, effectiveCost(10, 2, discount)),
      fairPriority(share, 0.2, cap, effectiveCost(30, 2, discount)),
      fairPriority(share, 0.1, cap, effectiveCost(100, 2, discount)),
    ];
    // The reference states them to 3 significant digits (0.0049383 appears truncated as 0.00493).
    close(p[0]!, -0.0278, 1e-4);
    close(p[1]!, 0.00493, 1e-5);
    close(p[2]!, 0.00259, 1e-5);
    assert.equal(p.indexOf(Math.max(...p)), 1, 'B wins');
  });

  test('the deficit is clamped to the cap', () => {
    assert.equal(fairPriority(1 / 3, 0.7, 0.25, 1.0), -0.25);
    assert.equal(fairPriority(1 / 3, 0, 0.25, 1), 0.25);
  });

  test('the coalescing discount applies only to dispatches serving several requests', () => {
    assert.equal(effectiveCost(0.02, 1, 0.1), 0.02);
    close(effectiveCost(0.02, 3, 0.1), 0.018, 1e-12);
  });
});

suite('recency EMA', () => {
  test('one halflife halves the sum (30 s)', () => {
    close(decayEma(1, 0, 30, 30), 0.5, 1e-12);
    close(decayEma(8, 10, 100, 30), 1, 1e-12);
    assert.equal(decayFactor(0, 30), 1);
    assert.equal(decayFactor(-5, 30), 1, 'time never runs backwards');
  });

  test('the ledger ages entries and their total lazily and consistently', () => {
    const l = new RecencyLedger(30);
    l.add('a', 1, 0);
    l.add('b', 2, 30);
    close(l.value('a', 30), 0.5, 1e-12);
    close(l.total(30), 2.5, 1e-12);
    close(l.total(60), 1.25, 1e-12);
    close(l.value('b', 60), 1, 1e-12);
    l.add('a', -10, 60); // corrections never drive a sum negative
    assert.equal(l.value('a', 60), 0);
    close(l.total(60), 1, 1e-12);
    l.remove('b', 60);
    assert.equal(l.total(60), 0);
  });
});

suite('cost learning', () => {
  test('the first sample seeds the estimate', () => {
    assert.equal(updateCostEma(undefined, 0.04, 0.2), 0.04);
  });

  test('50 updates at 0.01 with alpha 0.2 converge to ~0.01', () => {
    let c: number | undefined = 0.04;
    for (let i = 0; i < 50; i++) c = updateCostEma(c, 0.01, 0.2);
    close(c!, 0.01, 1e-6);
  });

  test('a table falls back to the default until measured, per batch size', () => {
    const t = new CostTable(0.2);
    assert.equal(t.estimate(4), DEFAULT_COST_SECONDS);
    assert.equal(t.measured(4), undefined);
    t.observe(4, 0.04);
    t.observe(4, 0.01);
    close(t.estimate(4), 0.034, 1e-12);
    assert.equal(t.estimate(8), DEFAULT_COST_SECONDS);
    t.seed(8, 0.5);
    assert.deepEqual(t.snapshot(), { 4: t.estimate(4), 8: 0.5 });
  });
});
