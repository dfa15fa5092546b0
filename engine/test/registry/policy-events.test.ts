import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { ServeError } from '@hloserve/common/errors';
import { LifecycleEvents, type LifecycleEvent } from '../../src/registry/lifecycle-events.js';
import { Policy } from '../../src/registry/policy.js';

suite('Policy', () => {
  const configured = { m: { weight: 2, residency: 'device' as const, maxBatchSize: 8, maxQueueDelayUs: null } };

  test('node.yaml, then persisted, then live: each layer overrides only what it names', () => {
    const p = new Policy(configured);
    assert.deepEqual(p.resolve('other'), { weight: 1, residency: 'system', maxBatchSize: null, maxQueueDelayUs: null });
    p.setPersisted('m', { weight: 3 });
    assert.deepEqual(p.resolve('m'), { weight: 3, residency: 'device', maxBatchSize: 8, maxQueueDelayUs: null });
    assert.deepEqual(p.applyLive('m', { residency: 'unpinned', weight: undefined }), {
      weight: 3,
      residency: 'unpinned',
      maxBatchSize: 8,
      maxQueueDelayUs: null,
    });
    p.applyLive('m', { weight: 5 });
    assert.equal(p.resolve('m').weight, 5);
    assert.equal(p.resolve('m').residency, 'unpinned', 'a later live change keeps the earlier one');
  });

  test('bad values are refused with INVALID_ARGUMENT and change nothing; layers follow a rename', () => {
    const p = new Policy(configured);
    for (const bad of [{ weight: 0 }, { weight: NaN }, { maxBatchSize: 1.5 }, { residency: 'gpu' as never }]) {
      assert.throws(
        () => p.applyLive('m', bad),
        (e: unknown) => e instanceof ServeError && e.code === 'HLO_ERR_INVALID_ARGUMENT',
      );
    }
    assert.equal(p.resolve('m').weight, 2);
    p.applyLive('m', { weight: 4 });
    p.rename('m', 'n');
    assert.equal(p.resolve('n').weight, 4);
    assert.equal(p.resolve('m').weight, 2, "the old name falls back to node.yaml's entry");
  });

  test('explicit mode makes device the default residency', () => {
    assert.equal(new Policy({}, 'device').resolve('x').residency, 'device');
  });
});

suite('LifecycleEvents', () => {
  test('numbered in order; a subscriber gets what it missed, then live events; the ring is bounded', () => {
    const ev = new LifecycleEvents(3);
    for (const model of ['a', 'b', 'c', 'd']) ev.emit({ type: 'loading', model, reason: 'load' });
    assert.equal(ev.lastSeq, 4);
    assert.deepEqual(
      ev.since(0).map((e) => e.seq),
      [2, 3, 4],
      'the oldest left the ring',
    );
    const seen: LifecycleEvent[] = [];
    const off = ev.subscribe(3, (e) => seen.push(e));
    ev.emit({ type: 'unloaded', model: 'a', dropped: 0 });
    off();
    ev.emit({ type: 'unloaded', model: 'b', dropped: 0 });
    assert.deepEqual(
      seen.map((e) => [e.seq, e.model]),
      [
        [4, 'd'],
        [5, 'a'],
      ],
    );
  });

  test('a throwing subscriber breaks neither the stream nor the others', () => {
    const ev = new LifecycleEvents();
    const seen: number[] = [];
    ev.subscribe(0, () => {
      throw new Error('boom');
    });
    ev.subscribe(0, (e) => seen.push(e.seq));
    ev.emit({ type: 'residency-changed', model: 'a', residency: 'device' });
    assert.deepEqual(seen, [1]);
  });
});
