/** A paced feed topic: load-only changes at the load turn, anything else at once. */
import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { queueLoadOnly, residencyLoadOnly } from '../../src/control/feed/feed-hub.js';
import { Topic, type KeyedDelta } from '../../src/control/feed/topic.js';

interface Sent {
  seq: number;
  kind: string;
  data: KeyedDelta;
}

function pacedTopic(loadOnly: (a: unknown, b: unknown) => boolean) {
  let due = false;
  const sent: Sent[] = [];
  const topic = new Topic('queues', true, (_t, text) => sent.push(JSON.parse(text) as Sent), 50, {
    loadOnly,
    due: () => due,
  });
  /** Sets the topic as a load turn does. */
  const turn = (items: ReadonlyMap<string, unknown>) => {
    due = true;
    topic.set(items);
    due = false;
  };
  return { topic, sent, turn };
}

const queue = (depth: number) => ({ depth, rows: depth, inflight: 1, oldestWaitMs: depth * 2, deadlineMisses: 0 });
const residency = (o: Partial<Record<string, unknown>> = {}) => ({
  floor: 'unpinned',
  weightBytes: 1024,
  deviceResident: true,
  hostResident: true,
  loading: false,
  leases: 0,
  loads: 1,
  evictions: 0,
  lastUsedAt: 1000,
  ...o,
});

suite('feed topic pacing', () => {
  test('load-only changes are published only at the load turn; the held change is not lost', () => {
    const { topic, sent, turn } = pacedTopic(queueLoadOnly);
    topic.set(new Map([['mlp', queue(0)]]));
    assert.equal(sent.length, 1, 'a new key publishes at once');
    for (let i = 1; i <= 3; i++) topic.set(new Map([['mlp', queue(i)]]));
    assert.equal(sent.length, 1, 'depth changes between turns are held');
    assert.match(topic.snapshotText(), /"depth":0/, 'the snapshot holds what was published, nothing newer');
    turn(new Map([['mlp', queue(4)]]));
    assert.equal(sent.length, 2);
    assert.deepEqual(sent[1]!.data.upsert, { mlp: queue(4) }, 'the delta carries the latest value');
    assert.equal(sent[1]!.seq, 2, 'seq still grows by one per delta');
    // The load stops: the last change still comes out at the next turn.
    topic.set(new Map([['mlp', queue(0)]]));
    assert.equal(sent.length, 2);
    turn(new Map([['mlp', queue(0)]]));
    assert.equal(sent.length, 3);
    assert.match(topic.snapshotText(), /"depth":0/);
    turn(new Map([['mlp', queue(0)]]));
    assert.equal(sent.length, 3, 'a turn with nothing changed sends nothing');
  });

  test('a patch is paced as a set is', () => {
    const { topic, sent, turn } = pacedTopic(queueLoadOnly);
    topic.set(new Map([['mlp', queue(0)]]));
    topic.patch(new Map([['mlp', queue(2)]]), ['mlp']);
    assert.equal(sent.length, 1);
    topic.patch(new Map([['fno', queue(1)]]), ['fno']);
    assert.equal(sent.length, 2, 'a key appearing is not load');
    assert.deepEqual(Object.keys(sent[1]!.data.upsert), ['fno']);
    turn(
      new Map([
        ['mlp', queue(2)],
        ['fno', queue(1)],
      ]),
    );
    assert.deepEqual(sent[2]!.data, { upsert: { mlp: queue(2) }, remove: [] });
  });

  test('a change beyond the load fields publishes at once, carrying the held load changes with it', () => {
    const { topic, sent } = pacedTopic(residencyLoadOnly);
    topic.set(
      new Map([
        ['mlp', residency()],
        ['fno', residency()],
      ]),
    );
    topic.set(
      new Map([
        ['mlp', residency({ leases: 3, lastUsedAt: 1100 })],
        ['fno', residency()],
      ]),
    );
    assert.equal(sent.length, 1, 'a lease and a last use are load');
    topic.set(
      new Map([
        ['mlp', residency({ leases: 2, lastUsedAt: 1200 })],
        ['fno', residency({ deviceResident: false, evictions: 1 })],
      ]),
    );
    assert.equal(sent.length, 2, 'an eviction is published at once');
    assert.deepEqual(Object.keys(sent[1]!.data.upsert).sort(), ['fno', 'mlp']);
    topic.set(new Map([['mlp', residency({ leases: 2, lastUsedAt: 1200 })]]));
    assert.deepEqual(sent[2]!.data.remove, ['fno'], 'a key going away is published at once');
  });

  test('what counts as load: queues between two values; residency leases and last use only', () => {
    assert.equal(queueLoadOnly(queue(1), queue(2)), true);
    assert.equal(queueLoadOnly(null, queue(2)), false, 'a queue appearing (model loaded) is not load');
    assert.equal(queueLoadOnly(queue(1), null), false);
    assert.equal(residencyLoadOnly(residency(), residency({ leases: 9, lastUsedAt: 5 })), true);
    for (const change of [{ floor: 'device' }, { deviceResident: false }, { loading: true }, { loads: 2 }])
      assert.equal(residencyLoadOnly(residency(), residency(change)), false, JSON.stringify(change));
    assert.equal(residencyLoadOnly(null, residency()), false);
  });

  test('an unpaced topic publishes every change', () => {
    const sent: string[] = [];
    const topic = new Topic('models', true, (_t, text) => sent.push(text));
    for (let i = 0; i < 5; i++) topic.set(new Map([['mlp', { weight: i }]]));
    assert.equal(sent.length, 5);
  });
});
