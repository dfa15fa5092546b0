import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { fillQuantum, ReplicaRouter, WorkerLoad } from '@hloserve/gateway/placement/fill-plan';

const picks = (r: ReplicaRouter, units: number[], keep = true) =>
  units.map((n) => {
    const res = r.route(n, n);
    if (!keep) res.release();
    return res.order[0]!;
  });

suite('fill plans', () => {
  test('the quantum is round(factor x max_batch) items, at least 1; unknown batch -> 1', () => {
    assert.equal(fillQuantum(8, 1), 8);
    assert.equal(fillQuantum(8, 0.5), 4);
    assert.equal(fillQuantum(8, 0.01), 1);
    assert.equal(fillQuantum(0, 2), 1);
    assert.equal(fillQuantum(-1, 2), 1);
  });

  test('run: Q items go to one replica before the next takes over', () => {
    const r = new ReplicaRouter(['a', 'b'], 4, 'run', 'fill_rr', new WorkerLoad());
    assert.deepEqual(picks(r, [1, 1, 1, 1, 1, 1, 1, 1, 1]), ['a', 'a', 'a', 'a', 'b', 'b', 'b', 'b', 'a']);
  });

  test('run: a replica a whole quantum behind takes the next run even mid-run', () => {
    const load = new WorkerLoad();
    const r = new ReplicaRouter(['a', 'b'], 2, 'run', 'fill_rr', load);
    const first = r.route(2, 2); // a gets a full quantum, kept in flight
    assert.equal(first.order[0], 'a');
    const second = r.route(1, 1);
    assert.equal(second.order[0], 'b');
    second.release();
    first.release();
    assert.equal(load.get('a'), 0);
    assert.equal(load.get('b'), 0);
  });

  test('run + fill_least: a new run opens on the worker with the least cross-model load', () => {
    const load = new WorkerLoad();
    load.add('a', 5); // another model's work on a
    const r = new ReplicaRouter(['a', 'b'], 1, 'run', 'fill_least', load);
    assert.equal(r.route(1, 1).order[0], 'b');
  });

  test('spread: the replica with the fewest items in flight', () => {
    const r = new ReplicaRouter(['a', 'b', 'c'], 8, 'spread', 'fill_rr', new WorkerLoad());
    assert.deepEqual(picks(r, [3, 1, 1, 1]), ['a', 'b', 'c', 'b']);
  });

  test('inflight: fills one replica to a quantum before the next (parks a lightly used model)', () => {
    const r = new ReplicaRouter(['a', 'b'], 4, 'inflight', 'fill_rr', new WorkerLoad());
    assert.deepEqual(picks(r, [1, 1, 1, 1, 1]), ['a', 'a', 'a', 'a', 'b']);
  });

  test('failover order: chosen first, then by whole quanta and items in flight', () => {
    const r = new ReplicaRouter(['a', 'b', 'c'], 2, 'spread', 'fill_rr', new WorkerLoad());
    r.route(2, 2); // a: 2
    r.route(1, 1); // b: 1
    const res = r.route(1, 1); // c
    assert.deepEqual(res.order, ['c', 'b', 'a']);
  });

  test('release is idempotent and returns exactly what was charged', () => {
    const load = new WorkerLoad();
    const r = new ReplicaRouter(['a'], 1, 'run', 'fill_least', load);
    const res = r.route(3, 0.1 + 0.2);
    res.release();
    res.release();
    assert.equal(load.get('a'), 0);
    assert.deepEqual(r.outstanding(), [0]);
  });
});
