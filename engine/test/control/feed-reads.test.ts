/**
 * How often the feed's sampler reads every model. Reading a thousand models costs the serving
 * thread 10-20 ms; at four ticks a second, with a console open under a churning load, that was a
 * tenth of the thread. A read of every model now takes at most FULL_READ_SHARE of the thread (and
 * comes at least once per `loadMs`); the ticks between read only the models events named.
 */
import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import type { EngineEvent, ModelPort, ModelView } from '../../src/control/api/model-port.js';
import { FULL_READ_SHARE, FeedHub } from '../../src/control/feed/feed-hub.js';
import type { FeedSocket } from '../../src/control/feed/feed-client.js';
import type { KeyedDelta } from '../../src/control/feed/topic.js';

interface Fake {
  residency: { leases: number; lastUsedAt: number; deviceResident: boolean; loads: number };
  state: string;
}

/** A port over `n` models whose every-model read costs `costMs` of a fake clock. */
function fakePort(n: number, costMs: number) {
  let now = 0;
  const models = new Map<string, Fake>();
  for (let i = 0; i < n; i++)
    models.set(`m${i}`, { residency: { leases: 0, lastUsedAt: 0, deviceResident: false, loads: 0 }, state: 'READY' });
  const listeners = new Set<(e: EngineEvent) => void>();
  const reads = { all: 0, one: [] as string[], lastAllAt: 0 };
  const view = (name: string, m: Fake): ModelView =>
    ({
      name,
      version: '1',
      state: m.state,
      reason: '',
      batchSizes: [1],
      residency: { ...m.residency },
      policy: null,
      queue: { depth: 0, rows: 0, inflight: 0, oldestWaitMs: 0, deadlineMisses: 0 },
      stats: null,
      drain: null,
    }) as unknown as ModelView;
  const port = {
    models: () => {
      reads.all++;
      reads.lastAllAt = now;
      now += costMs;
      return [...models].map(([k, m]) => view(k, m));
    },
    model: (name: string) => {
      reads.one.push(name);
      const m = models.get(name);
      return m && view(name, m);
    },
    worker: () => ({ devices: [] }),
    subscribe: (l: (e: EngineEvent) => void) => (listeners.add(l), () => listeners.delete(l)),
  } as unknown as ModelPort;
  const emit = (kind: string, model: string | null, data: Record<string, unknown> = {}) => {
    for (const l of listeners) l({ at: 0, kind, model, data });
  };
  return { port, models, reads, emit, clock: () => now, advance: (ms: number) => (now += ms) };
}

/** A hub ticking every 250 ms of the fake clock, with no bound on its clients' buffers. */
const hubOver = (f: ReturnType<typeof fakePort>) =>
  new FeedHub({ port: f.port, sampleMs: 250, now: f.clock, limits: { highWaterBytes: 1e9, lowWaterBytes: 0 } });

interface Msg {
  topic: string;
  kind: string;
  data: KeyedDelta;
}

function attach(hub: FeedHub) {
  const got: Msg[] = [];
  const socket: FeedSocket = {
    bufferedAmount: 0,
    readyState: 1,
    send: (t: string) => void got.push(JSON.parse(t) as Msg),
  };
  const client = hub.attach(socket);
  for (const t of ['models', 'residency', 'queues'] as const) client.subscribe(hub.topic(t), undefined);
  got.length = 0;
  return got;
}

const deltas = (got: Msg[], topic: string) => got.filter((m) => m.topic === topic && m.kind === 'delta');

suite('the feed sampler: reads of every model, and of the models events name', () => {
  test('a repository cheap to read is read whole at every tick', () => {
    const f = fakePort(20, 0.5);
    const hub = hubOver(f);
    attach(hub);
    const before = f.reads.all;
    for (let i = 0; i < 8; i++) {
      f.advance(250);
      hub.tick();
    }
    assert.equal(f.reads.all - before, 8);
    assert.deepEqual(f.reads.one, []);
    hub.close();
  });

  test('a costly repository is read whole once a second; between, only the named models, at once', () => {
    const f = fakePort(1000, 20); // 20 ms a read: at 1 % of the thread, once every 2 s; capped at 1 s
    assert.equal(FULL_READ_SHARE, 0.01);
    const hub = hubOver(f);
    const got = attach(hub);
    const before = f.reads.all;
    // An eviction of m7: the next tick reads m7 alone and sends its change.
    f.models.get('m7')!.residency.deviceResident = true;
    f.models.get('m7')!.residency.loads = 1;
    f.emit('model.evicted', 'm7');
    f.advance(250);
    hub.tick();
    assert.equal(f.reads.all, before, 'no read of every model inside the second');
    assert.deepEqual(f.reads.one, ['m7']);
    const r = deltas(got, 'residency');
    assert.equal(r.length, 1);
    assert.deepEqual(Object.keys(r[0]!.data.upsert), ['m7']);
    // Ticks with nothing named read nothing.
    f.advance(250);
    hub.tick();
    assert.deepEqual(f.reads.one, ['m7']);
    assert.equal(f.reads.all, before);
    // The second is up: every model again.
    for (let i = 0; i < 2; i++) {
      f.advance(250);
      hub.tick();
    }
    assert.equal(f.reads.all, before + 1);
    hub.close();
  });

  test('load changes of models no event names still come out once a second while patches go out every tick', () => {
    const f = fakePort(1000, 20);
    const hub = hubOver(f);
    const got = attach(hub);
    // m1 is busy (its lease and last use move: load only); m2 is loaded or evicted at every tick
    // between reads of every model (named by its event, and not a load change: its residency delta
    // goes out at once), so only the reads of every model can carry m1's changes.
    const seen: number[] = [];
    let patches = 0;
    for (let i = 1; i <= 12; i++) {
      f.models.get('m1')!.residency.lastUsedAt = i;
      const whole = f.clock() + 250 - f.reads.lastAllAt >= 1000;
      if (!whole) {
        f.models.get('m2')!.residency.deviceResident = !f.models.get('m2')!.residency.deviceResident;
        f.emit('model.evicted', 'm2');
      }
      f.advance(250);
      hub.tick();
      const r = deltas(got, 'residency');
      if (!whole) {
        assert.ok(
          r.some((m) => 'm2' in m.data.upsert),
          `tick ${i}: m2's change went out at once`,
        );
        patches++;
      }
      for (const m of r) {
        const m1 = m.data.upsert.m1 as { lastUsedAt: number } | undefined;
        if (m1) seen.push(m1.lastUsedAt);
      }
      got.length = 0;
    }
    assert.ok(patches >= 8, `${patches} ticks read m2 alone`);
    assert.ok(seen.length >= 2, `m1's last use was published ${seen.length} times in 3 s`);
    assert.ok(seen.length <= 3, `at most once a second: ${seen.join(', ')}`);
    hub.close();
  });

  test('a model gone, or renamed, leaves the topics at the next tick; an event naming none reads every model', () => {
    const f = fakePort(1000, 20);
    const hub = hubOver(f);
    const got = attach(hub);
    f.models.delete('m3');
    f.emit('model.unloaded', 'm3');
    const m5 = f.models.get('m5')!;
    f.models.delete('m5');
    f.models.set('m5b', m5);
    f.emit('model.renamed', 'm5b', { from: 'm5' });
    f.advance(250);
    hub.tick();
    const models = deltas(got, 'models');
    assert.equal(models.length, 1);
    assert.deepEqual(models[0]!.data.remove.sort(), ['m3', 'm5']);
    assert.deepEqual(Object.keys(models[0]!.data.upsert), ['m5b']);
    const before = f.reads.all;
    f.emit('budget', null);
    f.advance(250);
    hub.tick();
    assert.equal(f.reads.all, before + 1);
    hub.close();
  });

  test('with no client attached, events are not gathered, and the first client reads every model', () => {
    const f = fakePort(1000, 20);
    const hub = hubOver(f);
    f.emit('model.evicted', 'm9');
    const before = f.reads.all;
    attach(hub);
    assert.equal(f.reads.all, before + 1);
    f.advance(250);
    hub.tick();
    assert.deepEqual(f.reads.one, [], 'm9 was read with every model at the attach');
    hub.close();
  });

  test('load changes and the load turn listeners (the metric tick) go out in the same turn, once a second', () => {
    const f = fakePort(20, 0.5);
    const hub = hubOver(f);
    const got = attach(hub);
    const turns: number[] = [];
    const stop = hub.onLoadTurn(() => turns.push(got.length));
    const loadAt: number[] = [];
    for (let i = 1; i <= 16; i++) {
      // m1 is busy at every tick: its last use and leases move (load only).
      f.models.get('m1')!.residency.lastUsedAt = i;
      f.models.get('m1')!.residency.leases = i % 3;
      f.advance(250);
      const before = got.length;
      const turnsBefore = turns.length;
      hub.tick();
      const sentLoad = deltas(got.slice(before), 'residency').some((m) => 'm1' in m.data.upsert);
      if (sentLoad) {
        loadAt.push(i);
        assert.equal(turns.length, turnsBefore + 1, `tick ${i}: the load change left with a turn`);
        assert.equal(turns[turns.length - 1], got.length, 'the listener ran after the tick sent its deltas');
      } else assert.equal(turns.length, turnsBefore, `tick ${i}: a turn sent the load change`);
    }
    assert.deepEqual(loadAt, [4, 8, 12, 16], 'every fourth tick of 250 ms');
    stop();
    f.advance(1000);
    hub.tick();
    assert.equal(turns.length, 4, 'a removed listener is not called');
    hub.close();
  });

  test('the load turn comes with no client attached (the metric history stores without a console)', () => {
    const f = fakePort(20, 0.5);
    const hub = hubOver(f);
    let turns = 0;
    hub.onLoadTurn(() => turns++);
    const before = f.reads.all;
    for (let i = 0; i < 8; i++) {
      f.advance(250);
      hub.tick();
    }
    assert.equal(turns, 2);
    assert.equal(f.reads.all, before, 'nothing is read for nobody');
    hub.close();
  });
});
