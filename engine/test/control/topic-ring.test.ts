/** A feed topic's log deltas and its ring of recent deltas for resuming clients. */
import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { LOG_DELTA_ITEMS, Topic } from '../../src/control/feed/topic.js';

interface Sent {
  seq: number;
  data: { items: { i: number }[] };
}

suite('feed topic: log deltas and the resume ring', () => {
  test('entries appended together go out as one delta each LOG_DELTA_ITEMS, in order; the snapshot keeps the last few', () => {
    const sent: Sent[] = [];
    const topic = new Topic('events', false, (_t, text) => sent.push(JSON.parse(text) as Sent), 50);
    topic.append([{ i: 0 }]);
    topic.append(Array.from({ length: 150 }, (_, k) => ({ i: k + 1 })));
    topic.append([]);
    assert.deepEqual(
      sent.map((m) => [m.seq, m.data.items.length]),
      [
        [1, 1],
        [2, LOG_DELTA_ITEMS],
        [3, LOG_DELTA_ITEMS],
        [4, 150 - 2 * LOG_DELTA_ITEMS],
      ],
    );
    assert.deepEqual(
      sent.flatMap((m) => m.data.items.map((e) => e.i)),
      Array.from({ length: 151 }, (_, k) => k),
    );
    const snap = JSON.parse(topic.snapshotText()) as { seq: number; data: { items: { i: number }[] } };
    assert.equal(snap.seq, 4);
    assert.deepEqual(
      snap.data.items.map((e) => e.i),
      Array.from({ length: 50 }, (_, k) => 101 + k),
    );
    assert.deepEqual(topic.deltasSince(2)?.length, 2);
  });

  test('the ring holds the last 256 deltas, and no more than 4 Mi characters of them', () => {
    const small = new Topic('events', false, () => {}, 50);
    for (let i = 0; i < 300; i++) small.append([{ i }]);
    assert.equal(small.deltasSince(300 - 256)?.length, 256);
    assert.equal(small.deltasSince(300 - 257), null, 'older than the ring: resync');
    const big = new Topic('events', false, () => {}, 50);
    const pad = 'x'.repeat(100_000);
    for (let i = 0; i < 100; i++) big.append([{ i, pad }]);
    const held = big.deltasSince(100 - 41);
    assert.equal(held?.length, 41, '41 deltas of 100 kB fit in 4 Mi characters');
    assert.equal(big.deltasSince(100 - 42), null);
    const huge = new Topic('events', false, () => {}, 50);
    huge.append([{ pad: 'x'.repeat(5_000_000) }]);
    assert.equal(huge.deltasSince(0)?.length, 1, 'the newest delta stays, however large');
  });
});
