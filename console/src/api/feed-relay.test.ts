import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import { feedScope, FeedRelay, type AcquireLock, type ChannelLike } from './feed-relay.js';
import { StreamClient, type SocketLike } from './stream.js';
import type { StreamMessage } from './types.js';

/** A socket the test plays the engine on. */
class FakeSocket implements SocketLike {
  readyState = 0;
  sent: Record<string, unknown>[] = [];
  onopen: ((ev: unknown) => void) | null = null;
  onmessage: ((ev: { data: unknown }) => void) | null = null;
  onclose: ((ev: unknown) => void) | null = null;
  onerror: ((ev: unknown) => void) | null = null;
  constructor(readonly url: string) {}
  send(data: string): void {
    this.sent.push(JSON.parse(data) as Record<string, unknown>);
  }
  close(): void {
    this.readyState = 3;
  }
  open(): void {
    this.readyState = 1;
    this.onopen?.({});
  }
  serverClose(code: number): void {
    this.readyState = 3;
    this.onclose?.({ code });
  }
  push(msg: StreamMessage): void {
    this.onmessage?.({ data: JSON.stringify(msg) });
  }
  /** Subscribes and unsubscribes sent, compactly: "+models", "+models@3", "-models". */
  ops(): string[] {
    return this.sent
      .filter((m) => m.type !== 'auth')
      .flatMap((m) =>
        (m.topics as string[]).map((t) => {
          const since = (m.since as Record<string, number> | undefined)?.[t];
          return `${m.type === 'subscribe' ? '+' : '-'}${t}${since === undefined ? '' : `@${since}`}`;
        }),
      );
  }
}

/** BroadcastChannel's shape: delivered later (a task), to every other channel of the same name. */
class Bus {
  readonly channels = new Set<{ name: string; ch: ChannelLike; heard: number }>();
  /** Posts per channel name, heard or not. */
  readonly posts = new Map<string, number>();
  open(name: string): ChannelLike {
    const entry = { name, ch: null as unknown as ChannelLike, heard: 0 };
    const { channels, posts } = this;
    entry.ch = {
      onmessage: null,
      postMessage(msg: unknown) {
        posts.set(name, (posts.get(name) ?? 0) + 1);
        const copy = structuredClone(msg);
        for (const o of channels)
          if (o !== entry && o.name === name)
            setTimeout(() => {
              if (!channels.has(o)) return;
              o.heard++;
              o.ch.onmessage?.({ data: copy });
            });
      },
      close() {
        channels.delete(entry);
      },
    };
    this.channels.add(entry);
    return entry.ch;
  }
}

/** Web Locks' shape: one holder per name, the others queued in order. */
class Locks {
  readonly held = new Map<string, { id: number; grant: () => void }[]>();
  #next = 0;
  acquire: AcquireLock = (name, onLeader) => {
    const q = this.held.get(name) ?? [];
    this.held.set(name, q);
    const me = { id: this.#next++, grant: onLeader };
    q.push(me);
    if (q.length === 1) setTimeout(() => me.grant());
    return () => {
      const i = q.indexOf(me);
      if (i < 0) return;
      q.splice(i, 1);
      if (i === 0 && q.length > 0) setTimeout(() => q[0]!.grant());
    };
  };
}

let bus: Bus;
let locks: Locks;
let sockets: FakeSocket[];

function tab(worker: string | null = null, token = 'tok-admin'): FeedRelay {
  return new FeedRelay({
    scope: () => feedScope(worker, token),
    openChannel: (name) => bus.open(name),
    acquire: locks.acquire,
    createClient: () =>
      new StreamClient({
        url: `ws://x/api/v1/stream${worker ? `?worker=${worker}` : ''}`,
        createSocket: (url) => {
          const s = new FakeSocket(url);
          sockets.push(s);
          return s;
        },
        token: () => token,
        random: () => 0.5,
      }),
  });
}

/**
 * Lets the channel's and the locks' tasks run. Each round moves the clock 4 ms: timers nested five
 * deep wait at least that long (the HTML clamp, which the fake timers keep as browsers do).
 */
const settle = async () => {
  for (let i = 0; i < 5; i++) await vi.advanceTimersByTimeAsync(4);
};

const snap = (topic: string, seq: number, items: unknown[] = []): StreamMessage =>
  ({ topic, seq, kind: 'snapshot', data: { items } }) as unknown as StreamMessage;
const delta = (topic: string, seq: number): StreamMessage =>
  ({ topic, seq, kind: 'delta', data: { upsert: [], remove: [] } }) as unknown as StreamMessage;

beforeEach(() => {
  vi.useFakeTimers();
  bus = new Bus();
  locks = new Locks();
  sockets = [];
});
afterEach(() => vi.useRealTimers());

describe('feed relay: one socket per browser', () => {
  test('three tabs share one socket; each gets the messages of the topics it holds', async () => {
    const [a, b, c] = [tab(), tab(), tab()];
    const got: Record<string, string[]> = { a: [], b: [], c: [] };
    a.subscribe('models', (m) => got.a!.push(`${m.kind}${m.seq}`));
    b.subscribe('models', (m) => got.b!.push(`${m.kind}${m.seq}`));
    c.subscribe('queues', (m) => got.c!.push(`${m.kind}${m.seq}`));
    await settle();
    expect(sockets).toHaveLength(1);
    expect(a.isLeader && !b.isLeader && !c.isLeader).toBe(true);
    const s = sockets[0]!;
    s.open();
    await settle();
    // The wire holds the union of the tabs' topics.
    expect(s.ops().sort()).toEqual(['+models', '+queues']);
    s.push(snap('models', 4));
    s.push(snap('queues', 9));
    s.push(delta('models', 5));
    s.push(delta('queues', 10));
    await settle();
    expect(got).toEqual({ a: ['snapshot4', 'delta5'], b: ['snapshot4', 'delta5'], c: ['snapshot9', 'delta10'] });
    // The status is the leader's, the watermark each tab's own.
    expect(b.getStatus().state).toBe('live');
    expect(b.getStatus().watermark).toBe(5);
    expect(c.getStatus().watermark).toBe(10);
  });

  test('a tab that takes a topic the wire already carries gets a fresh snapshot, and no delta before it', async () => {
    const a = tab();
    const b = tab();
    a.subscribe('models', () => {});
    await settle();
    const s = sockets[0]!;
    s.open();
    s.push(snap('models', 1));
    s.push(delta('models', 2));
    await settle();
    const got: string[] = [];
    b.subscribe('models', (m) => got.push(`${m.kind}${m.seq}`));
    s.push(delta('models', 3)); // on the wire before b's wish reaches the leader
    await settle();
    expect(s.ops()).toEqual(['+models', '+models']); // the second: a snapshot asked for again
    s.push(delta('models', 4)); // sent before the server's answer: dropped until the snapshot
    s.push(snap('models', 4));
    s.push(delta('models', 5));
    await settle();
    expect(got).toEqual(['snapshot4', 'delta5']);
    expect(a.getStatus().state).toBe('live'); // not shown as a resync to the tab that had it
  });

  test('a tab that holds no topic (hidden) listens on no message channel, and hears none', async () => {
    const a = tab();
    const hidden = tab();
    const mine: ChannelLike[] = [];
    const watched = new FeedRelay({
      scope: () => feedScope(null, 'tok-admin'),
      openChannel: (name) => {
        const ch = bus.open(name);
        mine.push(ch);
        return ch;
      },
      acquire: locks.acquire,
      createClient: () => {
        throw new Error('not the leader');
      },
    });
    a.subscribe('models', () => {});
    await settle();
    const off = watched.subscribe('models', () => {});
    await settle();
    off();
    await vi.advanceTimersByTimeAsync(200);
    const s = sockets[0]!;
    s.open();
    s.push(snap('models', 1));
    s.push(delta('models', 2));
    await settle();
    const heard = (chs: ChannelLike[]) =>
      [...bus.channels].filter((e) => chs.includes(e.ch) && e.name.includes('#')).length;
    expect(heard(mine)).toBe(0); // its topic channel closed with its last subscription
    expect([...bus.channels].filter((e) => e.name.includes('#') && e.heard > 0)).toHaveLength(0);
    expect(hidden.isLeader).toBe(false);
  });

  test('the leader posts a topic only while another tab holds it', async () => {
    const a = tab();
    const b = tab();
    a.subscribe('models', () => {});
    await settle();
    const s = sockets[0]!;
    s.open();
    s.push(snap('models', 1));
    s.push(delta('models', 2));
    await settle();
    const modelPosts = () => [...bus.posts].filter(([name]) => name.endsWith('#models')).reduce((n, [, k]) => n + k, 0);
    expect(modelPosts()).toBe(0); // b holds nothing (hidden): no trip through the browser for it
    const got: string[] = [];
    const off = b.subscribe('models', (m) => got.push(`${m.kind}${m.seq}`));
    await settle();
    s.push(snap('models', 2));
    s.push(delta('models', 3));
    await settle();
    expect(got).toEqual(['snapshot2', 'delta3']);
    expect(modelPosts()).toBe(2);
    off();
    await vi.advanceTimersByTimeAsync(200); // the unsubscribe's debounce, then b's wish
    s.push(delta('models', 4));
    await settle();
    expect(modelPosts()).toBe(2);
    expect(got).toEqual(['snapshot2', 'delta3']);
  });

  test('a leader whose page hides (no topic left) hands the socket to a tab that shows one', async () => {
    const a = tab();
    const b = tab();
    const offA = a.subscribe('models', () => {});
    await settle();
    const got: string[] = [];
    b.subscribe('queues', (m) => got.push(`${m.kind}${m.seq}`));
    await settle();
    sockets[0]!.open();
    await settle();
    expect(sockets[0]!.ops().sort()).toEqual(['+models', '+queues']);
    offA(); // a's page hidden: its last topic goes
    await vi.advanceTimersByTimeAsync(1000);
    expect(a.isLeader).toBe(true); // a moment's grace: a quick switch back keeps the socket
    await vi.advanceTimersByTimeAsync(1200);
    await settle();
    expect(a.isLeader).toBe(false);
    expect(b.isLeader).toBe(true);
    expect(sockets).toHaveLength(2);
    const s = sockets[1]!;
    s.open();
    await settle();
    expect(s.ops()).toEqual(['+queues']);
    s.push(snap('queues', 3));
    await settle();
    expect(got).toEqual(['snapshot3']);
    expect(b.getStatus().state).toBe('live');
  });

  test('the last tab to let a topic go unsubscribes the wire (after the debounce)', async () => {
    const a = tab();
    const b = tab();
    a.subscribe('models', () => {});
    const offA = a.subscribe('metrics', () => {});
    const offB = b.subscribe('metrics', () => {});
    await settle();
    const s = sockets[0]!;
    s.open();
    await settle();
    offB();
    await vi.advanceTimersByTimeAsync(200);
    expect(s.ops().sort()).toEqual(['+metrics', '+models']);
    offA();
    await vi.advanceTimersByTimeAsync(300);
    await settle();
    expect(s.ops().sort()).toEqual(['+metrics', '+models', '-metrics']);
    expect(s.readyState).toBe(1);
  });

  test('the leader goes: another tab opens the socket within moments and every tab gets fresh snapshots', async () => {
    const a = tab();
    const b = tab();
    const c = tab();
    const got: string[] = [];
    a.subscribe('models', () => {});
    b.subscribe('models', () => {});
    c.subscribe('models', (m) => got.push(`${m.kind}${m.seq}`));
    await settle();
    sockets[0]!.open();
    sockets[0]!.push(snap('models', 7));
    await settle();
    a.suspend(); // pagehide: the lock is given back
    await settle();
    expect(sockets).toHaveLength(2);
    expect(b.isLeader).toBe(true);
    const s = sockets[1]!;
    s.open();
    await settle();
    expect(s.ops()[0]).toBe('+models');
    s.push(snap('models', 8));
    s.push(delta('models', 9));
    await settle();
    expect(got).toEqual(['snapshot7', 'snapshot8', 'delta9']);
    expect(c.getStatus().state).toBe('live');
  });

  test('another worker or another token gets its own socket, and nothing of the other feed', async () => {
    const admin = tab('worker0', 'tok-admin');
    const other = tab('worker1', 'tok-admin');
    const viewer = tab('worker0', 'tok-viewer');
    const got: Record<string, number> = { admin: 0, other: 0, viewer: 0 };
    admin.subscribe('models', () => got.admin!++);
    other.subscribe('models', () => got.other!++);
    viewer.subscribe('models', () => got.viewer!++);
    await settle();
    expect(sockets).toHaveLength(3);
    expect(sockets.map((s) => s.url)).toEqual([
      'ws://x/api/v1/stream?worker=worker0',
      'ws://x/api/v1/stream?worker=worker1',
      'ws://x/api/v1/stream?worker=worker0',
    ]);
    sockets[0]!.open();
    sockets[0]!.push(snap('models', 1));
    await settle();
    expect(got).toEqual({ admin: 1, other: 0, viewer: 0 });
  });

  test('a refusal on the leader reaches every tab (each then signs out)', async () => {
    const a = tab();
    const b = tab();
    a.subscribe('models', () => {});
    b.subscribe('models', () => {});
    await settle();
    sockets[0]!.open();
    sockets[0]!.serverClose(4401);
    await settle();
    expect(b.getStatus()).toMatchObject({ state: 'denied', refusedCode: 4401 });
  });

  test('a tab that moves to another worker leaves the relay, leads its own, and shows Resynced', async () => {
    let worker = 'worker0';
    const mover = new FeedRelay({
      scope: () => feedScope(worker, 'tok'),
      openChannel: (name) => bus.open(name),
      acquire: locks.acquire,
      createClient: () =>
        new StreamClient({
          url: () => `ws://x/api/v1/stream?worker=${worker}`,
          createSocket: (url) => {
            const s = new FakeSocket(url);
            sockets.push(s);
            return s;
          },
          token: () => 'tok',
        }),
    });
    const stay = tab('worker0', 'tok');
    stay.subscribe('models', () => {});
    mover.subscribe('models', () => {});
    await settle();
    expect(sockets).toHaveLength(1);
    worker = 'worker1';
    mover.rescope(true);
    await settle();
    // The mover led worker0's feed: it hands it over and opens worker1's.
    expect(stay.isLeader && mover.isLeader).toBe(true);
    const w1 = sockets.find((s) => s.url.endsWith('worker1'))!;
    w1.open();
    w1.push(snap('models', 1));
    await settle();
    expect(mover.getStatus().state).toBe('resynced');
    await vi.advanceTimersByTimeAsync(3000);
    expect(mover.getStatus().state).toBe('live');
  });
});
