/**
 * One live feed per browser, not per tab. The console's tabs that watch the same feed (same origin,
 * same worker, same token) elect a leader with a lock held for the leader's life; the leader alone
 * holds the WebSocket (a StreamClient: seq, resume, resync, backoff) and relays what it delivers to
 * the other tabs over a broadcast channel. Each tab tells the leader which topics it holds; the
 * leader's wire subscriptions are their union. A tab that takes a topic the leader already carries
 * asks for a fresh snapshot of it. When the leader goes (closed, crashed, switched worker or token)
 * the lock passes to another tab, which opens the socket and resubscribes: every tab then gets
 * fresh snapshots. The connection status is the leader's, mirrored in every tab.
 *
 * Why: each tab's own socket costs the engine a connection, a send per message and its heartbeats,
 * and the browser a network-service trip per message per tab. The scope key keeps a tab from ever
 * seeing a feed opened with another token or for another worker: those get their own channel.
 */
import type { StreamClient, StreamStatus, TopicHandler } from './stream.js';
import type { StreamMessage } from './types.js';
import { releaseTopic } from './topic-refs.js';

/** The part of a BroadcastChannel the relay uses. */
export interface ChannelLike {
  postMessage(msg: unknown): void;
  onmessage: ((ev: { data: unknown }) => void) | null;
  close(): void;
}

/** An exclusive lock per name: `onLeader` runs once held; the returned function gives it back (or stops waiting). */
export type AcquireLock = (name: string, onLeader: () => void) => () => void;

/** The part of the Web Locks API the relay uses. */
export interface LockManagerLike {
  request(name: string, options: { signal: AbortSignal }, callback: () => Promise<void> | void): Promise<unknown>;
}

/** AcquireLock on the Web Locks API: the lock is held until given back or the tab goes. */
export function webLock(locks: LockManagerLike): AcquireLock {
  return (name, onLeader) => {
    const abort = new AbortController();
    let release: (() => void) | null = null;
    let done = false;
    locks
      .request(name, { signal: abort.signal }, () => {
        if (done) return;
        onLeader();
        return new Promise<void>((r) => (release = r));
      })
      .catch(() => undefined); // aborted while waiting
    return () => {
      done = true;
      if (release) release();
      else abort.abort();
    };
  };
}

/** The feed's scope: origin is the channel's own; worker and token (by digest) are in its name. */
export function feedScope(worker: string | null, token: string | null): string {
  return `${worker ?? ''}|${token === null ? '-' : digest(token)}`;
}

/** Two 32-bit FNV-1a variants: a name that differs per token without holding the token itself. */
function digest(s: string): string {
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193) >>> 0;
    b = Math.imul(b ^ c, 0x5bd1e995) >>> 0;
  }
  return a.toString(36) + b.toString(36);
}

type RelayMessage =
  | { type: 'leader' }
  | { type: 'want'; tab: string; topics: string[]; fresh: string[] }
  | { type: 'bye'; tab: string }
  | { type: 'status'; link: Link };

export interface FeedRelayOptions {
  /** The scope of the feed this tab wants now (feedScope of the worker and token). */
  readonly scope: () => string;
  readonly openChannel: (name: string) => ChannelLike;
  readonly acquire: AcquireLock;
  /** The leader's wire client; disposed when it steps down. */
  readonly createClient: () => StreamClient;
  readonly tabId?: string;
  readonly unsubscribeDelayMs?: number;
  /** How long a leader whose page hid keeps the socket before handing it over. */
  readonly stepDownDelayMs?: number;
  /** How long Resynced is shown after a change of worker. */
  readonly resyncedHoldMs?: number;
}

interface TabTopic {
  refs: number;
  readonly handlers: Set<TopicHandler>;
  /** A snapshot reached this tab since it took the topic: deltas apply only after one. */
  ready: boolean;
  /** The seq of the last message applied (for the banner's watermark). */
  seq: number;
  unsubscribeTimer: ReturnType<typeof setTimeout> | null;
}

type Link = Omit<StreamStatus, 'watermark'>;

const WAITING: Link = { state: 'connecting', attempt: 0, nextRetryAtMs: null, error: null, refusedCode: null };

const sameLink = (a: Link, b: Link): boolean =>
  a.state === b.state &&
  a.attempt === b.attempt &&
  a.nextRetryAtMs === b.nextRetryAtMs &&
  a.error === b.error &&
  a.refusedCode === b.refusedCode;

export class FeedRelay {
  readonly #o: FeedRelayOptions;
  readonly #tab: string;
  readonly #topics = new Map<string, TabTopic>();
  readonly #statusListeners = new Set<(s: StreamStatus) => void>();
  /** The leader's connection state; the watermark is this tab's own (what it applied). */
  #link: Link = WAITING;
  #status: StreamStatus = { ...WAITING, watermark: 0 };
  /** After a change of worker: Resynced is shown once the new feed's snapshots are in. */
  #resyncPending = false;
  #resyncedTimer: ReturnType<typeof setTimeout> | null = null;
  #scope = '';
  /** The scope's control channel: leader, wishes, status. */
  #channel: ChannelLike | null = null;
  #name = '';
  /**
   * One channel per topic for the feed's messages, open only for the topics this tab holds (and,
   * on the leader, those the wire carries): a tab holding none (hidden) is never woken by them.
   */
  readonly #data = new Map<string, ChannelLike>();
  #giveBack: (() => void) | null = null;
  #stepDownTimer: ReturnType<typeof setTimeout> | null = null;
  #statusReply: ReturnType<typeof setTimeout> | null = null;
  /** Set while this tab is the leader. */
  #lead: {
    readonly client: StreamClient;
    /** Topics per tab (this one included): the wire holds their union. */
    readonly wants: Map<string, Set<string>>;
    readonly wire: Map<string, () => void>;
    /**
     * The wire's topics another tab holds: only those are posted. A post is a trip through the
     * browser process even with no tab to hear it, and the usual leader is the one shown tab of
     * many hidden ones, which hold nothing.
     */
    readonly relayed: Set<string>;
    readonly offStatus: () => void;
  } | null = null;

  constructor(o: FeedRelayOptions) {
    this.#o = o;
    this.#tab = o.tabId ?? Math.random().toString(36).slice(2);
    this.#join();
  }

  get isLeader(): boolean {
    return this.#lead !== null;
  }

  subscribe(topic: string, handler: TopicHandler): () => void {
    let t = this.#topics.get(topic);
    if (!t) {
      t = { refs: 0, handlers: new Set(), ready: false, seq: 0, unsubscribeTimer: null };
      this.#topics.set(topic, t);
    }
    t.refs++;
    t.handlers.add(handler);
    if (t.unsubscribeTimer !== null) {
      clearTimeout(t.unsubscribeTimer);
      t.unsubscribeTimer = null;
    } else if (t.refs === 1) this.#announce([topic]);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#release(topic, handler);
    };
  }

  onStatus(listener: (s: StreamStatus) => void): () => void {
    this.#statusListeners.add(listener);
    listener(this.#status);
    return () => this.#statusListeners.delete(listener);
  }

  getStatus(): StreamStatus {
    return this.#status;
  }

  /**
   * The token or the worker may have changed: a new scope means another channel and leader.
   * `resync`: another worker's feed replaces what was shown; the banner says Resynced once every
   * topic held has its snapshot from the new one.
   */
  rescope(resync = false): void {
    if (this.#o.scope() === this.#scope) {
      // Same feed (the same token set again, after a refusal, say): the leader reconnects.
      this.#lead?.client.reconnectNow();
      return;
    }
    this.#leave();
    for (const t of this.#topics.values()) t.ready = false;
    this.#resyncPending = resync && this.#topics.size > 0;
    this.#setLink(WAITING);
    this.#join();
  }

  /** The page goes (or into the back-forward cache): the others stop relaying to it. */
  suspend(): void {
    this.#leave();
  }

  /** Back from the back-forward cache: every topic from a fresh snapshot. */
  resume(): void {
    if (this.#channel) return;
    for (const t of this.#topics.values()) t.ready = false;
    this.#setLink(WAITING);
    this.#join();
  }

  dispose(): void {
    if (this.#resyncedTimer !== null) clearTimeout(this.#resyncedTimer);
    this.#resyncedTimer = null;
    for (const t of this.#topics.values()) if (t.unsubscribeTimer !== null) clearTimeout(t.unsubscribeTimer);
    this.#topics.clear();
    this.#leave();
    this.#setLink({ ...this.#link, state: 'idle' });
  }

  #join(): void {
    this.#scope = this.#o.scope();
    const name = `hloserve.feed:${this.#scope}`;
    this.#name = name;
    const channel = this.#o.openChannel(name);
    this.#channel = channel;
    channel.onmessage = (ev) => this.#onRelay(ev.data as RelayMessage);
    this.#announce([...this.#topics.keys()]);
  }

  /**
   * Only a tab that holds topics stands for leader, and a leader whose own topics are gone (its
   * page hidden) steps down: the socket then lives in a shown tab, and a hidden one does nothing.
   */
  #candidacy(): void {
    const channel = this.#channel;
    if (channel === null) return;
    const wants = this.#heldTopics().length > 0;
    if (wants && this.#stepDownTimer !== null) {
      clearTimeout(this.#stepDownTimer);
      this.#stepDownTimer = null;
    }
    if (wants && this.#giveBack === null)
      this.#giveBack = this.#o.acquire(this.#name, () => {
        if (this.#channel === channel) this.#becomeLeader();
      });
    else if (!wants && this.#giveBack !== null) {
      // A candidate withdraws at once; a leader waits a moment, so a quick switch between tabs, or
      // many tabs hidden one after another, hands the socket over once, to a tab still shown.
      if (!this.#lead) return this.#withdraw();
      this.#stepDownTimer ??= setTimeout(() => {
        this.#stepDownTimer = null;
        if (this.#heldTopics().length === 0) this.#withdraw();
      }, this.#o.stepDownDelayMs ?? 2000);
    }
  }

  #withdraw(): void {
    this.#stepDown();
    this.#giveBack?.();
    this.#giveBack = null;
    this.#syncData();
  }

  #stepDown(): void {
    if (this.#stepDownTimer !== null) clearTimeout(this.#stepDownTimer);
    this.#stepDownTimer = null;
    if (this.#statusReply !== null) clearTimeout(this.#statusReply);
    this.#statusReply = null;
    if (!this.#lead) return;
    this.#lead.offStatus();
    this.#lead.client.dispose();
    this.#lead = null;
  }

  #leave(): void {
    if (this.#lead) this.#stepDown();
    else this.#post({ type: 'bye', tab: this.#tab });
    this.#giveBack?.();
    this.#giveBack = null;
    this.#channel?.close();
    this.#channel = null;
    for (const ch of this.#data.values()) ch.close();
    this.#data.clear();
  }

  /** Opens and closes the topics' message channels to match what this tab holds or relays. */
  #syncData(): void {
    if (this.#channel === null) return;
    const needed = new Set(this.#heldTopics());
    if (this.#lead) for (const t of this.#lead.wire.keys()) needed.add(t);
    for (const [topic, ch] of this.#data)
      if (!needed.has(topic)) {
        ch.close();
        this.#data.delete(topic);
      }
    for (const topic of needed) {
      if (this.#data.has(topic)) continue;
      const ch = this.#o.openChannel(`${this.#name}#${topic}`);
      // The leader posts on the same object it would receive on: a channel never hears itself.
      ch.onmessage = (ev) => this.#deliver(ev.data as StreamMessage);
      this.#data.set(topic, ch);
    }
  }

  #becomeLeader(): void {
    const client = this.#o.createClient();
    const lead = {
      client,
      wants: new Map([[this.#tab, new Set(this.#heldTopics())]]),
      wire: new Map<string, () => void>(),
      relayed: new Set<string>(),
      offStatus: () => {},
    };
    this.#lead = lead;
    for (const t of this.#topics.values()) t.ready = false;
    // Taking over a live feed: the new socket's first connect is not news to the tabs.
    let takeover = this.#link.state === 'live' || this.#link.state === 'resynced';
    (lead as { offStatus: () => void }).offStatus = client.onStatus(({ watermark: _, ...link }) => {
      if (takeover && (link.state === 'idle' || link.state === 'connecting')) return;
      takeover = false;
      // Only the connection's changes travel: each tab's watermark follows what it applies.
      if (sameLink(link, this.#link)) return;
      this.#setLink(link);
      this.#post({ type: 'status', link });
    });
    this.#syncWire();
    // The others tell the new leader what they hold.
    this.#post({ type: 'leader' });
  }

  #heldTopics(): string[] {
    return [...this.#topics].filter(([, t]) => t.refs > 0 || t.unsubscribeTimer !== null).map(([n]) => n);
  }

  /** Tells the leader (or, as the leader, itself) this tab's topics; `fresh` ones need a snapshot. */
  #announce(fresh: string[]): void {
    const topics = this.#heldTopics();
    if (this.#lead) {
      this.#lead.wants.set(this.#tab, new Set(topics));
      this.#syncWire(fresh);
    } else {
      this.#syncData(); // listening before the leader is asked, so its snapshot is not missed
      this.#post({ type: 'want', tab: this.#tab, topics, fresh });
    }
    this.#candidacy();
  }

  #release(topic: string, handler: TopicHandler): void {
    releaseTopic(this.#topics, topic, handler, this.#o.unsubscribeDelayMs ?? 100, () => this.#announce([]));
  }

  /** Leader: the wire subscribes to the union of the tabs' topics; `fresh` ones get a new snapshot. */
  #syncWire(fresh: readonly string[] = []): void {
    const lead = this.#lead;
    if (!lead) return;
    const union = new Set<string>();
    lead.relayed.clear();
    for (const [tab, topics] of lead.wants)
      for (const t of topics) {
        union.add(t);
        if (tab !== this.#tab) lead.relayed.add(t);
      }
    for (const [topic, off] of lead.wire)
      if (!union.has(topic)) {
        off();
        lead.wire.delete(topic);
      }
    for (const topic of union) {
      if (lead.wire.has(topic)) {
        if (fresh.includes(topic)) lead.client.refresh(topic);
        continue;
      }
      lead.wire.set(
        topic,
        lead.client.subscribe(topic, (msg) => {
          if (lead.relayed.has(topic)) this.#data.get(topic)?.postMessage(msg);
          this.#deliver(msg);
        }),
      );
    }
    this.#syncData();
  }

  #onRelay(m: RelayMessage): void {
    switch (m.type) {
      case 'status':
        if (!this.#lead) this.#setLink(m.link);
        return;
      case 'leader':
        if (this.#lead) return;
        for (const t of this.#topics.values()) t.ready = false;
        // A tab holding nothing (hidden) has nothing to tell: it stays asleep.
        if (this.#heldTopics().length === 0) return;
        return this.#announce([...this.#topics.keys()]);
      case 'want': {
        if (!this.#lead) return;
        const known = this.#lead.wants.has(m.tab);
        this.#lead.wants.set(m.tab, new Set(m.topics));
        this.#syncWire(m.fresh);
        // A tab that just came needs the connection state too: one post for those that come together.
        if (!known && !this.#statusReply)
          this.#statusReply = setTimeout(() => {
            this.#statusReply = null;
            this.#post({ type: 'status', link: this.#link });
          }, 50);
        return;
      }
      case 'bye':
        if (!this.#lead) return;
        this.#lead.wants.delete(m.tab);
        return this.#syncWire();
    }
  }

  #deliver(msg: StreamMessage): void {
    const t = this.#topics.get(msg.topic);
    if (!t) return;
    if (msg.kind === 'snapshot') {
      t.ready = true;
      if (this.#resyncPending && [...this.#topics.values()].every((x) => x.ready)) this.#showResynced();
    }
    if (!t.ready) return;
    t.seq = msg.seq;
    let watermark = 0;
    for (const x of this.#topics.values()) if (x.ready && x.seq > watermark) watermark = x.seq;
    if (watermark !== this.#status.watermark) this.#setStatus({ ...this.#status, watermark });
    for (const h of [...t.handlers]) h(msg);
  }

  #post(m: RelayMessage): void {
    this.#channel?.postMessage(m);
  }

  #showResynced(): void {
    this.#resyncPending = false;
    if (this.#resyncedTimer !== null) clearTimeout(this.#resyncedTimer);
    this.#resyncedTimer = setTimeout(() => {
      this.#resyncedTimer = null;
      this.#setLink(this.#link);
    }, this.#o.resyncedHoldMs ?? 3000);
    this.#setLink(this.#link);
  }

  #setLink(link: Link): void {
    this.#link = link;
    // Resynced is this tab's own news (its worker changed); any other state of the link wins over it.
    const shown =
      this.#resyncedTimer !== null && link.state === 'live' ? { ...link, state: 'resynced' as const } : link;
    this.#setStatus({ ...shown, watermark: this.#status.watermark });
  }

  #setStatus(s: StreamStatus): void {
    this.#status = s;
    for (const l of [...this.#statusListeners]) l(s);
  }
}
