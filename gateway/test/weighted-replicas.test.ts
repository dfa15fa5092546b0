import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { Router } from '@hloserve/gateway/routing/router';

const W = ['w0', 'w1', 'w2'];

/** Picks `n` single-item requests (each released at once) and counts where they went. */
function tally(r: Router, n: number, discovered: readonly string[]): Map<string, number> {
  const got = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    const res = r.route('m', 1, discovered)!;
    got.set(res.order[0]!, (got.get(res.order[0]!) ?? 0) + 1);
    res.release();
  }
  return got;
}

suite('weighted replicas (a model split unevenly by the packing)', () => {
  test('requests follow the weights over many picks, in every fill mode', () => {
    for (const mode of ['run', 'spread', 'inflight'] as const) {
      const r = new Router('lpt_packing', { mode, policy: 'fill_least', factor: 1 });
      r.setPlacement(new Map([['m', { workers: W, weights: [0.6, 0.3, 0.1] }]]), new Map([['m', 4]]));
      const got = tally(r, 1000, W);
      // Runs of Q = 4 items: each count within a quantum of its share.
      assert.ok(Math.abs(got.get('w0')! - 600) <= 4, `${mode} w0 ${got.get('w0')}`);
      assert.ok(Math.abs(got.get('w1')! - 300) <= 4, `${mode} w1 ${got.get('w1')}`);
      assert.ok(Math.abs(got.get('w2')! - 100) <= 4, `${mode} w2 ${got.get('w2')}`);
    }
  });

  test('batched requests: the split is in items, not requests', () => {
    const r = new Router('lpt_packing', { mode: 'spread', policy: 'fill_least', factor: 1 });
    r.setPlacement(new Map([['m', { workers: ['w0', 'w1'], weights: [0.75, 0.25] }]]), new Map());
    const items = new Map<string, number>();
    for (let i = 0; i < 400; i++) {
      const n = 1 + (i % 5);
      const res = r.route('m', n, ['w0', 'w1'])!;
      items.set(res.order[0]!, (items.get(res.order[0]!) ?? 0) + n);
      res.release();
    }
    const total = items.get('w0')! + items.get('w1')!;
    assert.ok(Math.abs(items.get('w0')! / total - 0.75) < 0.01, `w0 ${items.get('w0')} of ${total}`);
  });

  test('a replica that is down gets nothing and the others split its share by their weights', () => {
    const r = new Router('lpt_packing', { mode: 'spread', policy: 'fill_least', factor: 1 });
    r.setPlacement(new Map([['m', { workers: W, weights: [0.2, 0.4, 0.4] }]]), new Map());
    const got = tally(r, 900, ['w0', 'w2']);
    assert.equal(got.get('w1'), undefined);
    assert.ok(Math.abs(got.get('w0')! - 300) <= 2, `w0 ${got.get('w0')}`);
    assert.ok(Math.abs(got.get('w2')! - 600) <= 2, `w2 ${got.get('w2')}`);
    // Back up: the weights apply again from there on.
    const back = tally(r, 1000, W);
    assert.ok(Math.abs(back.get('w1')! - 400) <= 20, `w1 ${back.get('w1')}`);
  });

  test('failover order: the chosen replica first, then the other live ones, a down one last', () => {
    const r = new Router('lpt_packing', { mode: 'spread', policy: 'fill_least', factor: 1 });
    r.setPlacement(new Map([['m', { workers: W, weights: [0.7, 0.2, 0.1] }]]), new Map());
    const res = r.route('m', 1, ['w0', 'w2'])!;
    assert.deepEqual(res.order, ['w0', 'w2', 'w1']);
    res.release();
    const all = r.route('m', 1, W)!;
    assert.equal(new Set(all.order).size, 3);
    assert.deepEqual([...all.order].sort(), W);
  });

  test('a repack that keeps the replicas changes the weights in place; the placement reports them', () => {
    const r = new Router('lpt_packing', { mode: 'spread', policy: 'fill_least', factor: 1 });
    r.setPlacement(new Map([['m', { workers: ['w0', 'w1'], weights: [0.5, 0.5] }]]), new Map());
    const held = r.route('m', 1, ['w0', 'w1'])!;
    r.setPlacement(new Map([['m', { workers: ['w0', 'w1'], weights: [0.9, 0.1] }]]), new Map());
    assert.deepEqual(r.placement().get('m'), { workers: ['w0', 'w1'], weights: [0.9, 0.1] });
    held.release();
    const got = tally(r, 1000, ['w0', 'w1']);
    assert.ok(Math.abs(got.get('w0')! - 900) <= 2, `w0 ${got.get('w0')}`);
  });

  test('a replica with weight 0 is a standby: no traffic while the others are up, failover when not', () => {
    const r = new Router('lpt_packing', { mode: 'spread', policy: 'fill_least', factor: 1 });
    r.setPlacement(new Map([['m', { workers: ['w0', 'w1'], weights: [1, 0] }]]), new Map());
    assert.equal(tally(r, 50, ['w0', 'w1']).get('w1'), undefined);
    assert.equal(r.route('m', 1, ['w1'])!.order[0], 'w1');
  });
});
