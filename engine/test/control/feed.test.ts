import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before, suite, test } from 'node:test';
import { WebSocket } from 'ws';
import type { Worker } from '../../src/worker/worker.js';
import { adminToken, inferMlp, mint, startControl, startMlpWorker, tempDir, type Harness } from './harness.js';

interface Msg {
  type?: string;
  topic?: string;
  seq?: number;
  kind?: 'snapshot' | 'delta' | 'resync';
  data?: unknown;
  code?: string;
  error?: string;
}

/** A test client that records every message and applies keyed deltas to its own copy. */
class FeedReader {
  readonly messages: Msg[] = [];
  /** Deltas seen per topic (counted even when `keep` is off). */
  readonly deltas = new Map<string, number>();
  /** Entries a log topic's deltas carried (events). */
  readonly entries = new Map<string, number>();
  readonly state = new Map<string, Record<string, unknown>>();
  readonly seq = new Map<string, number>();
  #waiters: (() => void)[] = [];
  constructor(
    readonly ws: WebSocket,
    /** Off: only the last message is kept (a reader that must not grow the test's own heap). */
    readonly keep = true,
  ) {
    ws.on('message', (raw) => {
      const m = JSON.parse(String(raw)) as Msg;
      if (!keep) this.messages.length = 0;
      this.messages.push(m);
      if (m.topic && m.kind === 'delta') {
        this.deltas.set(m.topic, (this.deltas.get(m.topic) ?? 0) + 1);
        const items = (m.data as { items?: unknown }).items;
        if (Array.isArray(items)) this.entries.set(m.topic, (this.entries.get(m.topic) ?? 0) + items.length);
      }
      if (m.topic && m.kind === 'snapshot') {
        this.state.set(m.topic, { ...(m.data as { items: Record<string, unknown> }).items });
        this.seq.set(m.topic, m.seq!);
      } else if (
        m.topic &&
        m.kind === 'delta' &&
        this.state.has(m.topic) &&
        !Array.isArray((m.data as { items?: unknown }).items)
      ) {
        assert.equal(m.seq, this.seq.get(m.topic)! + 1, `${m.topic}: deltas arrive in order, none missing`);
        const d = m.data as { upsert?: Record<string, unknown>; remove?: string[] };
        const s = this.state.get(m.topic)!;
        if (d.upsert) Object.assign(s, d.upsert);
        for (const k of d.remove ?? []) delete s[k];
        this.seq.set(m.topic, m.seq!);
      }
      for (const w of this.#waiters.splice(0)) w();
    });
  }
  async until(pred: (m: Msg[]) => boolean, ms = 5000): Promise<void> {
    const t0 = Date.now();
    while (!pred(this.messages)) {
      if (Date.now() - t0 > ms)
        throw new Error(`timed out; last: ${JSON.stringify(this.messages.at(-1)).slice(0, 200)}`);
      await new Promise<void>((r) => {
        this.#waiters.push(r);
        setTimeout(r, 50);
      });
    }
  }
  send(m: unknown): void {
    this.ws.send(JSON.stringify(m));
  }
}

suite('the live feed (WebSocket /api/v1/stream)', () => {
  let worker: Worker;
  let h: Harness;
  let dir: string;
  let url: string;
  let viewer: string;
  const sockets: WebSocket[] = [];
  before(async () => {
    dir = tempDir();
    worker = await startMlpWorker();
    h = await startControl(worker, dir, { feed: { highWaterBytes: 256 * 1024 } });
    await h.control.app.listen({ host: '127.0.0.1', port: 0 });
    url = `ws://127.0.0.1:${(h.control.app.server.address() as { port: number }).port}/api/v1/stream`;
    viewer = (await mint(h, await adminToken(h), 'viewer')).token;
  });
  after(async () => {
    for (const s of sockets) s.terminate();
    await h?.close();
    await worker?.stop(false);
    rmSync(dir, { recursive: true, force: true });
  });

  const open = async (
    o: { token?: string; origin?: string; firstMessage?: boolean; keep?: boolean } = {},
  ): Promise<FeedReader> => {
    const token = o.token ?? viewer;
    const ws = new WebSocket(url, o.firstMessage ? ['hloserve.v1'] : ['hloserve.v1', `bearer.${token}`], {
      headers: o.origin ? { origin: o.origin } : {},
    });
    sockets.push(ws);
    const reader = new FeedReader(ws, o.keep ?? true);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
      ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    });
    if (o.firstMessage) reader.send({ type: 'auth', token });
    return reader;
  };

  test('auth by subprotocol or first message; a bad token is closed with 4401; a foreign Origin is refused', async () => {
    const a = await open();
    await a.until((m) => m.some((x) => x.type === 'ready'));
    assert.equal(a.ws.protocol, 'hloserve.v1', 'the bearer token is never echoed as the protocol');
    const b = await open({ firstMessage: true });
    await b.until((m) => m.some((x) => x.type === 'ready'));
    const bad = await open({ token: 'hlo_000000000000_' + 'x'.repeat(43) });
    const code = await new Promise<number>((r) => bad.ws.once('close', (c) => r(c)));
    assert.equal(code, 4401);
    await assert.rejects(open({ origin: 'https://evil.example' }), /HTTP 403/);
    const ok = await open({ origin: 'https://console.example' });
    await ok.until((m) => m.some((x) => x.type === 'ready'));
  });

  test('a snapshot, then deltas that applied in order equal a fresh snapshot after a burst of changes', async () => {
    const c = await open();
    await c.until((m) => m.some((x) => x.type === 'ready'));
    c.send({ type: 'subscribe', topics: ['models', 'residency', 'queues', 'events'] });
    await c.until((m) => m.filter((x) => x.kind === 'snapshot').length === 4);
    const firstSeq = c.seq.get('models')!;
    // A burst: policy changes and pins, each followed by a sampler tick.
    for (let i = 1; i <= 20; i++) {
      await h.port.setPolicy('mlp', { weight: i, maxQueueDelayUs: i * 10 });
      if (i % 5 === 0) await h.port.setPolicy('mlp', { residency: i % 10 === 0 ? 'device' : 'unpinned' });
      h.control.context.hub.sample();
    }
    const target = h.control.context.hub.topic('models').seq;
    assert.ok(target >= firstSeq + 20, 'each tick with a change published a delta');
    await c.until(() => c.seq.get('models') === target);
    const fresh = await open();
    await fresh.until((m) => m.some((x) => x.type === 'ready'));
    fresh.send({ type: 'subscribe', topics: ['models', 'residency', 'queues'] });
    await fresh.until((m) => m.filter((x) => x.kind === 'snapshot').length === 3);
    for (const t of ['models', 'residency', 'queues']) assert.deepEqual(c.state.get(t), fresh.state.get(t), t);
    assert.equal((c.state.get('models')!.mlp as { policy: { weight: number } }).policy.weight, 20);
    // The events topic carried the policy changes, numbered by the store, in order.
    await c.until(() => (c.entries.get('events') ?? 0) >= 24);
    const seqs = c.messages
      .filter((x) => x.topic === 'events' && x.kind === 'delta')
      .flatMap((x) => (x.data as { items: { seq: number }[] }).items.map((e) => e.seq));
    assert.deepEqual(
      seqs,
      seqs.map((_, i) => seqs[0]! + i),
      'events numbered one by one, none missing',
    );
  });

  test('the metrics topic: every tick a delta with its instant and totals, carrying only the samples that changed', async () => {
    const history = h.control.history;
    const t0 = 5_000_000;
    history.tick(t0);
    history.tick(t0 + 1000);
    const c = await open();
    await c.until((m) => m.some((x) => x.type === 'ready'));
    c.send({ type: 'subscribe', topics: ['metrics'] });
    await c.until((m) => m.some((x) => x.kind === 'snapshot'));
    type Totals = { requestsPerSecond: number; loads: number; p99Ms: number | null };
    const snap = c.messages.find((x) => x.kind === 'snapshot')!.data as {
      at: number;
      items: Record<string, unknown>;
      recent: { at: number; totals: Totals }[];
    };
    assert.equal(snap.at, t0 + 1000, 'the snapshot says when its samples were read');
    assert.deepEqual(Object.keys(snap.items), ['mlp'], 'the snapshot holds every model');
    assert.deepEqual(
      snap.recent.map((r) => r.at),
      [t0, t0 + 1000],
      'and the recent ticks’ totals, for charts',
    );
    type Delta = {
      at: number;
      totals: Totals;
      upsert: Record<string, { requestsPerSecond: number }>;
      remove: string[];
    };
    const deltas = () =>
      c.messages.filter((x) => x.topic === 'metrics' && x.kind === 'delta').map((x) => x.data as Delta);
    // An idle second: a delta that changes nothing, so the client's time still moves on.
    history.tick(t0 + 2000);
    await c.until(() => deltas().length === 1);
    assert.deepEqual([deltas()[0]!.at, deltas()[0]!.upsert, deltas()[0]!.remove], [t0 + 2000, {}, []]);
    // A second with requests changes the model's sample, and the next idle one changes it back.
    for (let i = 0; i < 3; i++) await inferMlp(worker);
    history.tick(t0 + 3000);
    history.tick(t0 + 4000);
    history.tick(t0 + 5000);
    await c.until(() => deltas().length === 4);
    const [busy, quiet, still] = deltas().slice(1);
    assert.equal(busy!.upsert.mlp!.requestsPerSecond, 3);
    assert.equal(busy!.totals.requestsPerSecond, 3);
    assert.ok(busy!.totals.p99Ms !== null && busy!.totals.p99Ms > 0, 'the busy second has a p99');
    assert.equal(quiet!.upsert.mlp!.requestsPerSecond, 0);
    assert.equal(quiet!.totals.p99Ms, null);
    assert.deepEqual([still!.upsert, still!.remove], [{}, []]);
    assert.equal('at' in busy!.upsert.mlp!, false, 'a sample is not stamped twice');
    const fresh = await open();
    await fresh.until((m) => m.some((x) => x.type === 'ready'));
    fresh.send({ type: 'subscribe', topics: ['metrics'] });
    await fresh.until((m) => m.some((x) => x.kind === 'snapshot'));
    assert.deepEqual(c.state.get('metrics'), fresh.state.get('metrics'), 'the deltas applied give the snapshot');
  });

  test('resume from the last seq replays only what was missed; a seq the ring no longer holds gets resync', async () => {
    const seq = h.control.context.hub.topic('models').seq;
    await h.port.setPolicy('mlp', { weight: 77 });
    h.control.context.hub.sample();
    const c = await open();
    await c.until((m) => m.some((x) => x.type === 'ready'));
    c.send({ type: 'subscribe', topics: ['models'], since: { models: seq } });
    await c.until((m) => m.some((x) => x.topic === 'models'));
    const got = c.messages.filter((x) => x.topic === 'models');
    assert.deepEqual(
      got.map((x) => [x.kind, x.seq]),
      [['delta', seq + 1]],
    );
    const d = await open();
    await d.until((m) => m.some((x) => x.type === 'ready'));
    d.send({ type: 'subscribe', topics: ['models'], since: { models: seq + 1000 } });
    await d.until((m) => m.some((x) => x.kind === 'snapshot'));
    assert.deepEqual(
      d.messages.filter((x) => x.topic).map((x) => x.kind),
      ['resync', 'snapshot'],
    );
  });

  test('a client that stops reading is marked for resync and dropped from fan-out; server memory stays flat', async () => {
    // Earlier tests' readers keep every message they get: close them so the heap measured is the server's.
    for (const s of sockets.splice(0)) s.terminate();
    while (h.control.context.hub.clientCount > 0) await new Promise((r) => setTimeout(r, 10));
    const slow = await open();
    await slow.until((m) => m.some((x) => x.type === 'ready'));
    slow.send({ type: 'subscribe', topics: ['events'] });
    await slow.until((m) => m.some((x) => x.kind === 'snapshot'));
    const fast = await open({ keep: false });
    await fast.until((m) => m.some((x) => x.type === 'ready'));
    fast.send({ type: 'subscribe', topics: ['events'] });
    await fast.until((m) => m.some((x) => x.kind === 'snapshot'));
    // The slow client's socket stops reading: the kernel buffers fill, then the server's.
    (slow.ws as unknown as { _socket: { pause(): void } })._socket.pause();
    const pad = 'x'.repeat(16 * 1024);
    // Paced in rounds of 10 (160 kB), so a client that does read keeps up.
    const burst = async (n: number) => {
      for (let i = 0; i < n; i++) {
        void h.control.context.events.record({ at: Date.now(), kind: 'test.pad', model: null, data: { i, pad } });
        if (i % 10 === 9) {
          await h.control.context.events.flushed();
          await new Promise((r) => setTimeout(r, 5));
        }
      }
      await h.control.context.events.flushed();
    };
    await burst(400); // ~6.5 MB: past the kernel buffers and the 256 KiB bound
    global.gc?.();
    const heap0 = process.memoryUsage().heapUsed;
    await burst(2000); // ~33 MB more fanned out while the slow client reads nothing
    global.gc?.();
    const grown = process.memoryUsage().heapUsed - heap0;
    assert.ok(grown < 16 * 1024 * 1024, `heap grew ${(grown / 1e6).toFixed(1)} MB`);
    assert.equal(h.control.context.hub.markedForResync(), 1, 'the slow client, and only it, is marked');
    await fast.until(() => (fast.entries.get('events') ?? 0) >= 2400, 20_000);
    // Reading again, the slow client is told to resync and gets a fresh snapshot.
    (slow.ws as unknown as { _socket: { resume(): void } })._socket.resume();
    const ticking = setInterval(() => h.control.context.hub.sample(), 50); // the sampler's timer, faster
    try {
      await slow.until((m) => m.some((x) => x.kind === 'resync'), 20_000);
    } finally {
      clearInterval(ticking);
    }
    await slow.until((m) => m.filter((x) => x.kind === 'snapshot').length === 2, 20_000);
    const got = slow.entries.get('events') ?? 0;
    assert.ok(got < 2400, `the slow client was dropped from fan-out (${got} events reached it)`);
  });

  test('unknown topics and non-JSON messages close the feed with the reason', async () => {
    const c = await open();
    await c.until((m) => m.some((x) => x.type === 'ready'));
    c.send({ type: 'subscribe', topics: ['nope'] });
    const code = await new Promise<number>((r) => c.ws.once('close', (x) => r(x)));
    assert.equal(code, 4400);
    assert.match(JSON.stringify(c.messages.at(-1)), /unknown topic 'nope'/);
  });

  test('JSON that is not an object, or whose type or topic is not a string, is refused as such', async () => {
    for (const firstMessage of [false, true])
      for (const text of ['null', '7', '[]']) {
        const c = await open({ firstMessage, keep: true });
        // Authenticated by subprotocol or by a first message: this one is the session's next.
        await c.until((m) => m.some((x) => x.type === 'ready'));
        c.ws.send(text);
        const code = await new Promise<number>((r) => c.ws.once('close', (x) => r(x)));
        assert.equal(code, 4400, text);
        assert.deepEqual(
          { code: c.messages.at(-1)?.code, error: c.messages.at(-1)?.error },
          { code: 'HLO_ERR_INVALID_ARGUMENT', error: 'a feed message must be a JSON object' },
        );
      }
    // A type or topic that is an object whose toString is not a function: quoted, not converted.
    for (const msg of [{ type: { toString: null } }, { type: 'subscribe', topics: [{ toString: null }] }]) {
      const c = await open({ keep: true });
      await c.until((m) => m.some((x) => x.type === 'ready'));
      c.send(msg);
      assert.equal(await new Promise<number>((r) => c.ws.once('close', (x) => r(x))), 4400);
      assert.equal(c.messages.at(-1)?.code, 'HLO_ERR_INVALID_ARGUMENT');
      assert.match(c.messages.at(-1)?.error ?? '', /unknown (message type|topic) \{"toString":null\}/);
    }
    // A session's first message, when it must be the auth message, is refused the same way.
    const ws = new WebSocket(url, ['hloserve.v1']);
    sockets.push(ws);
    const reader = new FeedReader(ws, true);
    await new Promise<void>((resolve) => ws.once('open', () => resolve()));
    ws.send('null');
    assert.equal(await new Promise<number>((r) => ws.once('close', (x) => r(x))), 4400);
    assert.equal(reader.messages.at(-1)?.code, 'HLO_ERR_INVALID_ARGUMENT');
  });
});
