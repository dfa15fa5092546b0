import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { ewma } from '@hloserve/gateway/placement/ewma';
import { computeAssignment, type PackingInput } from '@hloserve/gateway/placement/lpt-packing';

const GB = 2 ** 30;
const single = (input: PackingInput): Record<string, string> =>
  Object.fromEntries([...computeAssignment(input).placement].map(([m, p]) => [m, p.workers.join(',')]));
const u = (o: Record<string, number>) => new Map(Object.entries(o));

suite('lpt_packing: the reference test vectors', () => {
  test('compute only: a=.5, b=.4, c=.1 on two workers -> a:w0, b:w1, c:w1', () => {
    assert.deepEqual(single({ utilisation: u({ a: 0.5, b: 0.4, c: 0.1 }), workers: ['w0', 'w1'] }), {
      a: 'w0',
      b: 'w1',
      c: 'w1',
    });
  });

  test('memory: a=.6/1 GB, b=.5/9 GB, c=.1/9 GB on 10 GB caps -> a:w0, b:w1, c:w0', () => {
    const base = {
      utilisation: u({ a: 0.6, b: 0.5, c: 0.1 }),
      workers: ['w0', 'w1'],
      memory: u({ a: 1 * GB, b: 9 * GB, c: 9 * GB }),
    };
    assert.deepEqual(single({ ...base, memoryCap: u({ w0: 10 * GB, w1: 10 * GB }) }), { a: 'w0', b: 'w1', c: 'w0' });
    // Pure compute would put c on w1; huge caps reproduce that.
    assert.deepEqual(single({ ...base, memoryCap: u({ w0: 1e6 * GB, w1: 1e6 * GB }) }), { a: 'w0', b: 'w1', c: 'w1' });
    // A cap of 0 means unconstrained.
    assert.deepEqual(single({ ...base, memoryCap: u({ w0: 0, w1: 0 }) }), { a: 'w0', b: 'w1', c: 'w1' });
  });

  test('two cold 6 GB models on 10 GB caps land on different workers', () => {
    const r = single({
      utilisation: u({ x: 0, y: 0 }),
      workers: ['w0', 'w1'],
      memory: u({ x: 6 * GB, y: 6 * GB }),
      memoryCap: u({ w0: 10 * GB, w1: 10 * GB }),
    });
    assert.notEqual(r.x, r.y);
  });

  test('hysteresis 0.1: a model alone on w1 stays there', () => {
    const r = single({
      utilisation: u({ a: 0.5 }),
      workers: ['w0', 'w1'],
      previous: new Map([['a', ['w1']]]),
      hysteresis: 0.1,
    });
    assert.deepEqual(r, { a: 'w1' });
  });

  test('hysteresis 0.1: hot .7 and a .3 both on w1 -> hot stays, a moves to w0', () => {
    const res = computeAssignment({
      utilisation: u({ hot: 0.7, a: 0.3 }),
      workers: ['w0', 'w1'],
      previous: new Map([
        ['hot', ['w1']],
        ['a', ['w1']],
      ]),
      hysteresis: 0.1,
    });
    assert.deepEqual(res.placement.get('hot')!.workers, ['w1']);
    assert.deepEqual(res.placement.get('a')!.workers, ['w0']);
    assert.deepEqual(res.held, ['hot']);
  });

  test('a model moves only when another worker scores better by more than the hysteresis', () => {
    // a -> w0 (.5), b -> w1 (.3); c was on w0 where it would score .75 against .55 on w1.
    const input = {
      utilisation: u({ a: 0.5, b: 0.3, c: 0.25 }),
      workers: ['w0', 'w1'],
      previous: new Map([['c', ['w0']]]),
    };
    assert.equal(single({ ...input, hysteresis: 0.1 }).c, 'w1');
    assert.equal(single({ ...input, hysteresis: 0.4 }).c, 'w0');
  });

  test('ewma: half-life of compute, dt 0 is a no-op', () => {
    assert.equal(ewma(0, 1, 300, 300), 0.5);
    assert.ok(Math.abs(ewma(0, 1, 60, 300) - (1 - 2 ** -0.2)) < 1e-12);
    assert.equal(ewma(0.25, 1, 0, 300), 0.25);
  });
});

suite('lpt_packing: replicas', () => {
  test('k replicas take k distinct workers, each a 1/k share, memory charged in full', () => {
    const res = computeAssignment({
      utilisation: u({ big: 0.9, small: 0.2 }),
      workers: ['w0', 'w1', 'w2'],
      replicas: u({ big: 2 }),
      memory: u({ big: 2 * GB, small: 1 * GB }),
    });
    const big = res.placement.get('big')!;
    assert.deepEqual(big.workers, ['w0', 'w1']);
    assert.deepEqual(big.weights, [0.5, 0.5]);
    assert.deepEqual(res.placement.get('small')!.workers, ['w2']);
    assert.equal(res.memoryLoad.get('w0'), 2 * GB);
    assert.ok(Math.abs(res.computeLoad.get('w1')! - 0.45) < 1e-12);
  });

  test('replicas above the worker count mean every worker; previous replicas are preferred on ties', () => {
    const res = computeAssignment({
      utilisation: u({ m: 0.4 }),
      workers: ['w0', 'w1', 'w2'],
      replicas: u({ m: 2 }),
      previous: new Map([['m', ['w1', 'w2']]]),
    });
    assert.deepEqual(res.placement.get('m')!.workers, ['w1', 'w2']);
    const all = computeAssignment({ utilisation: u({ m: 0.4 }), workers: ['w0', 'w1'], replicas: u({ m: Infinity }) });
    assert.deepEqual(all.placement.get('m')!.workers, ['w0', 'w1']);
  });

  test('skewed traffic on four workers, the hottest model on two replicas: within 5% of even', () => {
    const loads = Object.fromEntries(Array.from({ length: 24 }, (_, i) => [`m${i}`, 1 / (i + 1)]));
    const res = computeAssignment({ utilisation: u(loads), workers: ['w0', 'w1', 'w2', 'w3'], replicas: u({ m0: 2 }) });
    const per = [...res.computeLoad.values()];
    const mean = per.reduce((a, b) => a + b, 0) / per.length;
    assert.ok(Math.max(...per) / mean - 1 < 0.05, `max/mean ${Math.max(...per) / mean}`);
  });
});

suite('packing with models an operator moved (pinned)', () => {
  test('a pinned model stays where it was put and its load is charged there before the others', () => {
    const res = computeAssignment({
      utilisation: new Map([
        ['hot', 0.9],
        ['a', 0.3],
        ['b', 0.3],
      ]),
      workers: ['w0', 'w1', 'w2'],
      pinned: new Map([['hot', ['w2']]]),
    });
    assert.deepEqual(res.placement.get('hot')?.workers, ['w2']);
    // Without the pin the hottest model would take the first worker; the others avoid w2's load.
    assert.ok(!res.placement.get('a')!.workers.includes('w2'));
    assert.ok(!res.placement.get('b')!.workers.includes('w2'));
    assert.equal(res.computeLoad.get('w2'), 0.9);
  });
});
