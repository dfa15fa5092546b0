import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import { backoffDelayMs, StreamClient, type SocketLike } from './stream.js';
import type { StreamMessage } from './types.js';

/** A socket the test drives by hand: it records what the client sends and plays the server. */
class FakeSocket implements SocketLike {
  readyState = 0;
  sent: Record<string, unknown>[] = [];
  closed = false;
  onopen: ((ev: unknown) => void) | null = null;
  onmessage: ((ev: { data: unknown }) => void) | null = null;
  onclose: ((ev: unknown) => void) | null = null;
  onerror: ((ev: unknown) => void) | null = null;
  constructor(readonly url: string) {}
  send(data: string): void {
    this.sent.push(JSON.parse(data) as Record<string, unknown>);
  }
  close(): void {
    this.closed = true;
    this.readyState = 3;
  }
  open(): void {
    this.readyState = 1;
    this.onopen?.({});
  }
  serverClose(code = 1006): void {
    this.readyState = 3;
    this.onclose?.({ code });
  }
  control(msg: object): void {
    this.onmessage?.({ data: JSON.stringify(msg) });
  }
  push(msg: StreamMessage): void {
    this.onmessage?.({ data: JSON.stringify(msg) });
  }
  /** What was sent, compactly: "auth", "subscribe models@6,audit", "unsubscribe models". */
  ops(): string[] {
    return this.sent.map((m) => {
      if (m.type === 'auth') return 'auth';
      const since = (m.since ?? {}) as Record<string, number>;
      const topics = (m.topics as string[]).map((t) => (t in since ? `${t}@${since[t]}` : t));
      return `${m.type as string} ${topics.join(',')}`;
    });
  }
}

function setup(extra: Partial<ConstructorParameters<typeof StreamClient>[0]> = {}) {
  const sockets: FakeSocket[] = [];
  const client = new StreamClient({
    url: 'ws://engine/api/v1/stream',
    createSocket: (url) => {
      const s = new FakeSocket(url);
      sockets.push(s);
      return s;
    },
    token: () => 'tok',
    random: () => 0.5,
    now: () => Date.now(),
    ...extra,
  });
  const last = () => sockets[sockets.length - 1]!;
  return { client, sockets, last };
}

const snap = (topic: string, seq: number, data: unknown = {}): StreamMessage => ({
  topic,
  seq,
  kind: 'snapshot',
  data,
});
const delta = (topic: string, seq: number, data: unknown = {}): StreamMessage => ({ topic, seq, kind: 'delta', data });

describe('StreamClient', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  test('authenticates first, then subscribes every topic once however many components hold it', () => {
    const { client, sockets, last } = setup();
    const a = vi.fn();
    const b = vi.fn();
    client.subscribe('models', a);
    client.subscribe('models', b);
    client.subscribe('workers', a);
    expect(sockets).toHaveLength(1);
    last().open();
    expect(last().ops()).toEqual(['auth', 'subscribe models,workers']);
    expect(last().sent[0]).toEqual({ type: 'auth', token: 'tok' });
    last().control({ type: 'ready', actor: 'token:1', scope: 'admin' });
    last().push(snap('models', 1, ['x']));
    expect(a).toHaveBeenCalledTimes(1);
    expect(b).toHaveBeenCalledTimes(1);
    expect(client.getStatus().state).toBe('live');
  });

  test('applies deltas in seq order, drops replays, and asks for a snapshot on a gap', () => {
    const { client, last } = setup();
    const h = vi.fn();
    client.subscribe('models', h);
    last().open();
    last().push(snap('models', 10));
    last().push(delta('models', 11));
    last().push(delta('models', 11)); // duplicate
    last().push(delta('models', 10)); // old
    expect(h).toHaveBeenCalledTimes(2);
    expect(client.seqOf('models')).toBe(11);
    last().push(delta('models', 13)); // 12 was missed
    expect(h).toHaveBeenCalledTimes(2);
    expect(client.seqOf('models')).toBeNull();
    expect(last().ops().at(-1)).toBe('subscribe models');
    // Deltas before the new snapshot are not applied to a state we no longer trust.
    last().push(delta('models', 14));
    expect(h).toHaveBeenCalledTimes(2);
    last().push(snap('models', 14));
    expect(h).toHaveBeenCalledTimes(3);
    expect(client.seqOf('models')).toBe(14);
  });

  test('resumes each topic from its last seq after a reconnect and stays live when the server replays', () => {
    const { client, sockets, last } = setup();
    client.subscribe('models', vi.fn());
    client.subscribe('audit', vi.fn());
    last().open();
    last().push(snap('models', 5));
    last().push(snap('audit', 2));
    last().push(delta('models', 6));
    last().serverClose();
    expect(client.getStatus().state).toBe('reconnecting');
    vi.advanceTimersByTime(30_000);
    expect(sockets).toHaveLength(2);
    last().open();
    expect(last().ops()).toEqual(['auth', 'subscribe models@6,audit@2']);
    expect(client.getStatus().state).toBe('live');
    last().push(delta('models', 7));
    expect(client.seqOf('models')).toBe(7);
  });

  test('switching source (another worker) drops the old socket and its seqs: every topic from a fresh snapshot', () => {
    let worker = 'w0';
    const { client, sockets, last } = setup({ url: () => `ws://gw/api/v1/stream?worker=${worker}` });
    const h = vi.fn();
    client.subscribe('models', h);
    client.subscribe('audit', vi.fn());
    last().open();
    last().push(snap('models', 50));
    last().push(snap('audit', 7));
    const old = last();
    worker = 'w1';
    client.switchSource();
    expect(old.closed).toBe(true);
    expect(sockets).toHaveLength(2);
    expect(last().url).toBe('ws://gw/api/v1/stream?worker=w1');
    expect(client.seqOf('models')).toBeNull();
    expect(client.getStatus().watermark).toBe(0);
    // The old worker's late message is not applied to the new source.
    old.push(delta('models', 51));
    expect(h).toHaveBeenCalledTimes(1);
    last().open();
    expect(last().ops()).toEqual(['auth', 'subscribe models,audit']);
    last().push(snap('models', 3, { worker: 'w1' }));
    last().push(snap('audit', 1));
    expect(client.getStatus().state).toBe('resynced');
    expect(h).toHaveBeenLastCalledWith(expect.objectContaining({ kind: 'snapshot', seq: 3 }));
    last().push(delta('models', 4));
    expect(client.seqOf('models')).toBe(4);
  });

  test('a snapshot answering a resume means the server resynced: the banner says so, then settles', () => {
    const { client, last } = setup();
    const h = vi.fn();
    client.subscribe('models', h);
    last().open();
    last().push(snap('models', 5));
    last().serverClose();
    vi.advanceTimersByTime(1_000);
    last().open();
    last().push(snap('models', 900, { fresh: true }));
    expect(client.getStatus().state).toBe('resynced');
    expect(h).toHaveBeenLastCalledWith(expect.objectContaining({ kind: 'snapshot', seq: 900 }));
    vi.advanceTimersByTime(3_000);
    expect(client.getStatus().state).toBe('live');
  });

  test('a resync from the server (a slow client) drops deltas until the snapshot that follows it', () => {
    const { client, last } = setup();
    const h = vi.fn();
    client.subscribe('events', h);
    last().open();
    last().push(snap('events', 3));
    last().push({ topic: 'events', seq: 9, kind: 'resync', data: null });
    expect(client.seqOf('events')).toBeNull();
    last().push(delta('events', 10));
    expect(h).toHaveBeenCalledTimes(1);
    last().push(snap('events', 9));
    expect(h).toHaveBeenCalledTimes(2);
    expect(client.getStatus().state).toBe('resynced');
    last().push(delta('events', 10));
    expect(h).toHaveBeenCalledTimes(3);
    expect(last().ops()).toEqual(['auth', 'subscribe events']); // the server sends the snapshot unasked
  });

  test('a refused token or origin (4401/4403) stops reconnecting and says why', () => {
    const { client, sockets, last } = setup();
    client.subscribe('models', vi.fn());
    last().open();
    last().control({ type: 'error', code: 'HLO_ERR_UNAUTHENTICATED', error: 'token revoked' });
    last().serverClose(4401);
    vi.advanceTimersByTime(120_000);
    expect(sockets).toHaveLength(1);
    expect(client.getStatus()).toMatchObject({ state: 'denied', error: 'token revoked', refusedCode: 4401 });
    client.reconnectNow(); // after signing in with a new token
    expect(sockets).toHaveLength(2);
    expect(client.getStatus().error).toBeNull();
  });

  test('reconnects with exponential backoff, jittered and capped, and resets after a successful open', () => {
    const { client, sockets, last } = setup({ backoffBaseMs: 500, backoffMaxMs: 4_000, random: () => 0 });
    client.subscribe('models', vi.fn());
    last().serverClose(); // never opened
    // random() = 0: half of each step, so 250, 500, 1000, 2000, 2000 (capped at 4000 / 2)
    const expected = [250, 500, 1_000, 2_000, 2_000];
    for (const wait of expected) {
      const before = sockets.length;
      expect(client.getStatus().state).toBe('reconnecting');
      vi.advanceTimersByTime(wait - 1);
      expect(sockets.length).toBe(before);
      vi.advanceTimersByTime(1);
      expect(sockets.length).toBe(before + 1);
      last().serverClose();
    }
    expect(client.getStatus().attempt).toBe(6);
    vi.advanceTimersByTime(2_000);
    last().open();
    expect(client.getStatus().attempt).toBe(0);
    last().serverClose();
    expect(client.getStatus().nextRetryAtMs! - Date.now()).toBe(250);
  });

  test('backoff jitter spreads between half and all of the step', () => {
    expect(backoffDelayMs(1, 1_000, 30_000, () => 0)).toBe(500);
    expect(backoffDelayMs(1, 1_000, 30_000, () => 1)).toBe(1_000);
    expect(backoffDelayMs(4, 1_000, 30_000, () => 0.5)).toBe(6_000);
    expect(backoffDelayMs(20, 1_000, 30_000, () => 1)).toBe(30_000);
  });

  test('unsubscribes on the wire only after the debounce, and a quick remount never churns it', () => {
    const { client, last } = setup({ unsubscribeDelayMs: 100 });
    const off1 = client.subscribe('models', vi.fn());
    last().open();
    last().push(snap('models', 1));
    off1();
    vi.advanceTimersByTime(50);
    const off2 = client.subscribe('models', vi.fn()); // strict-mode style remount
    vi.advanceTimersByTime(500);
    expect(last().ops()).toEqual(['auth', 'subscribe models']);
    expect(client.seqOf('models')).toBe(1);
    off2();
    off2(); // releasing twice is harmless
    vi.advanceTimersByTime(99);
    expect(last().ops().at(-1)).toBe('subscribe models');
    vi.advanceTimersByTime(1);
    expect(last().ops().at(-1)).toBe('unsubscribe models');
    expect(client.activeTopics()).toEqual([]);
  });

  test('one holder leaving keeps the topic for the others', () => {
    const { client, last } = setup();
    const a = vi.fn();
    const b = vi.fn();
    const offA = client.subscribe('models', a);
    client.subscribe('models', b);
    last().open();
    offA();
    vi.advanceTimersByTime(1_000);
    expect(last().ops()).not.toContain('unsubscribe models');
    last().push(snap('models', 1));
    expect(a).not.toHaveBeenCalled();
    expect(b).toHaveBeenCalledTimes(1);
  });

  test('stops reconnecting once nothing is subscribed', () => {
    const { client, sockets, last } = setup();
    const off = client.subscribe('models', vi.fn());
    last().open();
    off();
    vi.advanceTimersByTime(100);
    last().serverClose();
    vi.advanceTimersByTime(60_000);
    expect(sockets).toHaveLength(1);
    expect(client.getStatus().state).toBe('idle');
  });

  test('reports the highest seq seen as the watermark', () => {
    const { client, last } = setup();
    client.subscribe('models', vi.fn());
    client.subscribe('audit', vi.fn());
    last().open();
    last().push(snap('models', 40));
    last().push(snap('audit', 7));
    expect(client.getStatus().watermark).toBe(40);
    last().push(snap('models', 3)); // the engine restarted: its topics start over
    expect(client.getStatus().watermark).toBe(7);
  });
});
