/** Engine events: stored in batches in the order they came, streamed with their seqs, the oldest removed. */
import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { EventLog } from '../../src/control/events/event-log.js';
import { Topic } from '../../src/control/feed/topic.js';
import { createLogger } from '../../src/log.js';
import { mlpControlFixture } from './harness.js';

suite('event log (real Worker, SQLite)', () => {
  const f = mlpControlFixture();

  test('a burst is stored in its order, streamed in that order, and only the newest `kept` stay', async () => {
    const streamed: { seq: number; kind: string }[] = [];
    let deltas = 0;
    const topic = new Topic(
      'events',
      false,
      (_t, text) => {
        deltas++;
        streamed.push(...(JSON.parse(text).data.items as { seq: number; kind: string }[]));
      },
      5000,
    );
    const log = new EventLog(f.h.store, f.h.port, topic, createLogger('error'), 50);
    const burst = Array.from({ length: 300 }, (_, i) => ({ at: i, kind: `burst.${i}`, model: null, data: { i } }));
    const done = burst.map((e) => log.record(e));
    await Promise.all(done);
    await log.flushed();
    const mine = streamed.filter((e) => e.kind.startsWith('burst.'));
    assert.deepEqual(
      mine.map((e) => e.kind),
      burst.map((e) => e.kind),
    );
    for (let i = 1; i < mine.length; i++) assert.equal(mine[i]!.seq, mine[i - 1]!.seq + 1);
    // Streamed as the store took them: a delta per batch (at most 64 events each), not per event.
    assert.ok(deltas >= Math.ceil(300 / 64) && deltas < 50, `${deltas} deltas for 300 events`);
    const stored = await f.h.store.listEvents({ limit: 1000 });
    assert.ok(stored.length <= 50 + 5, `${stored.length} events left (50 kept, pruned in steps of 5)`);
    assert.equal(stored.at(-1)!.seq, mine.at(-1)!.seq, 'the newest are the ones kept');
    assert.equal(stored.at(-1)!.kind, 'burst.299');
    // An event whose data cannot be stored fails alone; its batch is stored.
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    void log.record({ at: 1, kind: 'bad', model: null, data: circular });
    await log.record({ at: 1, kind: 'good', model: null, data: {} });
    assert.equal(streamed.at(-1)!.kind, 'good');
    assert.equal(streamed.at(-1)!.seq, mine.at(-1)!.seq + 1);
    assert.ok(!streamed.some((e) => e.kind === 'bad'));
    // Recorded later, in a new batch: numbered after the others.
    await log.record({ at: 1, kind: 'after', model: null, data: {} });
    assert.equal(streamed.at(-1)!.kind, 'after');
    assert.equal(streamed.at(-1)!.seq, mine.at(-1)!.seq + 2);
    await log.close();
  });
});
