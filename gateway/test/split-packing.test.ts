import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { computeSplitAssignment } from '@hloserve/gateway/placement/split-packing';
import { reweigh } from '@hloserve/gateway/placement/reweigh';
import type { PackingResult } from '@hloserve/gateway/placement/lpt-packing';

const W3 = ['w0', 'w1', 'w2'];
const GB = 1e9;
const r3 = (x: number): number => Math.round(x * 1000) / 1000;
const loads = (p: PackingResult): number[] => [...p.computeLoad.values()].map(r3);
const on = (p: PackingResult, m: string): readonly string[] => p.placement.get(m)!.workers;
const weights = (p: PackingResult, m: string): number[] => p.placement.get(m)!.weights.map(r3);

suite('split packing (McNaughton wrap-around to the even share)', () => {
  test('a=4, b=3, c=2 on three workers: a split 3+1, every worker at T=3', () => {
    const p = computeSplitAssignment({
      utilisation: new Map([
        ['a', 4],
        ['b', 3],
        ['c', 2],
      ]),
      workers: W3,
    });
    assert.deepEqual(loads(p), [3, 3, 3]);
    assert.deepEqual(on(p, 'a'), ['w0', 'w1']);
    assert.deepEqual(weights(p, 'a'), [0.75, 0.25]);
    assert.deepEqual(on(p, 'b'), ['w2']);
    assert.deepEqual(on(p, 'c'), ['w1']);
  });

  test('three equal models on two workers: the third wraps around, half on each', () => {
    const p = computeSplitAssignment({
      utilisation: new Map([
        ['a', 1.5],
        ['b', 1.5],
        ['c', 1.5],
      ]),
      workers: ['w0', 'w1'],
    });
    assert.deepEqual(loads(p), [2.25, 2.25]);
    assert.equal(on(p, 'a').length + on(p, 'b').length + on(p, 'c').length, 4, 'one split (W - 1)');
    assert.deepEqual(weights(p, 'c'), [0.5, 0.5]);
  });

  test('no split when whole models already even out: the reference vector a=.5, b=.4, c=.1', () => {
    const p = computeSplitAssignment({
      utilisation: new Map([
        ['a', 0.5],
        ['b', 0.4],
        ['c', 0.1],
      ]),
      workers: ['w0', 'w1'],
    });
    assert.deepEqual(on(p, 'a'), ['w0']);
    assert.deepEqual(on(p, 'b'), ['w1']);
    assert.deepEqual(on(p, 'c'), ['w1']);
    for (const m of ['a', 'b', 'c']) assert.deepEqual(weights(p, m), [1]);
  });

  test('a model over the room by less than the slack is not split', () => {
    const p = computeSplitAssignment({
      utilisation: new Map([
        ['a', 0.504],
        ['b', 0.496],
      ]),
      workers: ['w0', 'w1'],
    });
    assert.deepEqual(on(p, 'a'), ['w0']);
    assert.deepEqual(on(p, 'b'), ['w1']);
  });

  test('memory caps: a split never lands where the weights do not fit', () => {
    const memoryCap = new Map(W3.map((w) => [w, 10 * GB]));
    const p = computeSplitAssignment({
      utilisation: new Map([
        ['a', 6],
        ['b', 2],
        ['c', 1],
      ]),
      memory: new Map([
        ['a', 6 * GB],
        ['b', 6 * GB],
        ['c', 1 * GB],
      ]),
      memoryCap,
      workers: W3,
    });
    assert.deepEqual(on(p, 'a'), ['w0', 'w1']);
    assert.deepEqual(on(p, 'b'), ['w2'], 'the only worker with 6 GB left');
    assert.deepEqual(loads(p), [3, 3, 3]);
    for (const w of W3) assert.ok(p.memoryLoad.get(w)! <= memoryCap.get(w)!, `${w} within its cap`);
  });

  test("an operator's replica count is kept: k workers, the load water-filled over them", () => {
    const p = computeSplitAssignment({
      utilisation: new Map([
        ['a', 2],
        ['b', 2],
        ['c', 2],
      ]),
      replicas: new Map([['a', 2]]),
      workers: W3,
    });
    assert.deepEqual(on(p, 'a'), ['w0', 'w1']);
    assert.deepEqual(weights(p, 'a'), [0.5, 0.5]);
    assert.deepEqual(on(p, 'b'), ['w2']);
    assert.deepEqual(loads(p), [2, 2, 2]);
    const every = computeSplitAssignment({
      utilisation: new Map([
        ['a', 3],
        ['b', 3],
      ]),
      replicas: new Map([['a', Infinity]]),
      workers: W3,
    });
    assert.deepEqual([...on(every, 'a')].sort(), W3);
    assert.deepEqual(loads(every), [2, 2, 2]);
    // The count is exact even for a model hotter than two workers' even shares: no wrap to a third.
    const hot = computeSplitAssignment({
      utilisation: new Map([
        ['a', 6],
        ['b', 1],
        ['c', 1],
      ]),
      replicas: new Map([['a', 2]]),
      workers: W3,
    });
    assert.deepEqual(on(hot, 'a'), ['w0', 'w1']);
    assert.deepEqual(weights(hot, 'a'), [0.5, 0.5]);
    assert.deepEqual(loads(hot), [3, 3, 2]);
  });

  test('a model an operator moved stays there, the others packed around it', () => {
    const p = computeSplitAssignment({
      utilisation: new Map([
        ['a', 3],
        ['b', 2],
        ['c', 1],
      ]),
      pinned: new Map([['c', ['w0']]]),
      workers: W3,
    });
    assert.deepEqual(on(p, 'c'), ['w0']);
    assert.deepEqual(loads(p), [2, 2, 2]);
  });

  test('stable under small load changes: replica sets kept, only the weights follow', () => {
    const replicas = new Map([['mlp', 2]]);
    const first = computeSplitAssignment({
      utilisation: new Map([
        ['mlp', 5],
        ['fno', 4.1],
        ['resnet', 2],
      ]),
      replicas,
      workers: W3,
      hysteresis: 0.1,
    });
    assert.ok(Math.max(...loads(first)) <= r3(11.1 / 3) + 0.001);
    const previous = new Map([...first.placement].map(([m, pl]) => [m, pl.workers]));
    for (const jitter of [0.97, 1.03]) {
      const next = computeSplitAssignment({
        utilisation: new Map([
          ['mlp', 5 * jitter],
          ['fno', 4.1 / jitter],
          ['resnet', 2 * jitter],
        ]),
        replicas,
        previous,
        workers: W3,
        hysteresis: 0.1,
      });
      for (const m of ['mlp', 'fno', 'resnet'])
        assert.deepEqual([...on(next, m)].sort(), [...previous.get(m)!].sort(), m);
      const l = loads(next);
      const mean = l.reduce((a, b) => a + b, 0) / 3;
      assert.ok(Math.max(...l) / mean < 1.01, `even within 1 %: ${l.join(', ')}`);
    }
  });

  test('nothing measured: whole models on distinct workers, equal weights', () => {
    const p = computeSplitAssignment({
      utilisation: new Map([
        ['a', 0],
        ['b', 0],
      ]),
      replicas: new Map([['a', 2]]),
      workers: W3,
    });
    assert.equal(on(p, 'a').length, 2);
    assert.deepEqual(weights(p, 'a'), [0.5, 0.5]);
    assert.equal(on(p, 'b').length, 1);
  });
});

suite('re-weighing replicas that stay put', () => {
  const sets = new Map<string, readonly string[]>([
    ['mlp', ['w1', 'w2']],
    ['fno', ['w0', 'w2']],
    ['resnet', ['w1']],
  ]);
  const memoryLoad = new Map(W3.map((w) => [w, 0]));

  test('the shares even the workers out as far as the sets allow', () => {
    const p = reweigh({
      utilisation: new Map([
        ['mlp', 59],
        ['fno', 35],
        ['resnet', 5],
      ]),
      workers: W3,
      sets,
      memoryLoad,
    });
    const l = loads(p);
    assert.ok(Math.max(...l) / 33 < 1.005, l.join(', '));
    for (const m of sets.keys()) assert.deepEqual(on(p, m), sets.get(m), `${m} keeps its replicas`);
    assert.deepEqual(weights(p, 'resnet'), [1]);
  });

  test('when the load moves, the weights follow it; a pinned model keeps its even split', () => {
    const u = new Map([
      ['mlp', 40],
      ['fno', 50],
      ['resnet', 9],
    ]);
    const p = reweigh({ utilisation: u, workers: W3, sets, memoryLoad });
    assert.ok(weights(p, 'fno')[0]! > 0.6, 'fno leans on w0, where nothing else runs');
    const pinned = reweigh({ utilisation: u, workers: W3, sets, memoryLoad, pinned: new Set(['fno']) });
    assert.deepEqual(weights(pinned, 'fno'), [0.5, 0.5]);
  });
});
