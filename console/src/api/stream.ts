/**
 * One shared WebSocket to /api/v1/stream for the whole console. Topics are reference-counted (many
 * components, one wire subscription), unsubscribes are debounced (a remount does not churn the
 * wire), every topic resumes from its last seq after a reconnect, a gap in seq asks for a fresh
 * snapshot, and reconnects back off exponentially with jitter.
 *
 * Wire protocol (the engine's docs/control-api.md). Client -> server: {type:'auth', token} first,
 * then {type:'subscribe', topics, since?: {topic: seq}} and {type:'unsubscribe', topics}.
 * Server -> client: feed messages {topic, seq, kind: snapshot|delta|resync, data} (a resync is
 * followed by a fresh snapshot), and control messages {type: ready|heartbeat|pong|error}. The
 * socket closes with 4401/4403 when the token or the origin is refused: no reconnect then.
 */
import type { StreamMessage } from './types.js';
import { releaseTopic } from './topic-refs.js';

/** The part of a WebSocket the client uses, so tests can hand it a fake. */
export interface SocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: unknown) => void) | null;
  onerror: ((ev: unknown) => void) | null;
}

export type ConnectionState = 'idle' | 'connecting' | 'live' | 'reconnecting' | 'resynced' | 'denied';

export interface StreamStatus {
  readonly state: ConnectionState;
  /** Reconnect attempts since the last successful open. */
  readonly attempt: number;
  /** When the next reconnect fires (epoch ms), while reconnecting. */
  readonly nextRetryAtMs: number | null;
  /** The highest seq seen on any topic: shown in the banner as a watermark. */
  readonly watermark: number;
  /** Why the engine refused the feed, when state is 'denied'. */
  readonly error: string | null;
  /** The close code of a refusal: 4401 (token) or 4403 (origin or scope). */
  readonly refusedCode: number | null;
}

export type TopicHandler = (msg: StreamMessage) => void;

export interface StreamClientOptions {
  readonly url: string | (() => string);
  readonly createSocket: (url: string) => SocketLike;
  readonly token?: () => string | null;
  readonly unsubscribeDelayMs?: number;
  readonly backoffBaseMs?: number;
  readonly backoffMaxMs?: number;
  /** How long `resynced` is shown before it settles back to `live`. */
  readonly resyncedHoldMs?: number;
  readonly random?: () => number;
  readonly now?: () => number;
}

const OPEN = 1;

interface Topic {
  refs: number;
  readonly handlers: Set<TopicHandler>;
  /** Last seq applied; null until a snapshot arrives. */
  seq: number | null;
  /** A subscribe is on the wire and not yet answered by a snapshot. */
  awaitingSnapshot: boolean;
  /** The server said resync: the snapshot that follows replaces what we had. */
  resyncPending: boolean;
  unsubscribeTimer: ReturnType<typeof setTimeout> | null;
}

/** Exponential backoff with "equal jitter": half the step fixed, half random, capped. */
export function backoffDelayMs(attempt: number, baseMs: number, maxMs: number, random: () => number): number {
  const step = Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(step / 2 + (step / 2) * random());
}

export class StreamClient {
  private readonly opts: Required<Omit<StreamClientOptions, 'token'>> & Pick<StreamClientOptions, 'token'>;
  private readonly topics = new Map<string, Topic>();
  private readonly statusListeners = new Set<(s: StreamStatus) => void>();
  private socket: SocketLike | null = null;
  private reconnectTimer: ReturnType<typeof setTimeout> | null = null;
  private resyncedTimer: ReturnType<typeof setTimeout> | null = null;
  private status: StreamStatus = {
    state: 'idle',
    attempt: 0,
    nextRetryAtMs: null,
    watermark: 0,
    error: null,
    refusedCode: null,
  };
  private everOpened = false;
  private disposed = false;

  constructor(opts: StreamClientOptions) {
    this.opts = {
      unsubscribeDelayMs: 100,
      backoffBaseMs: 500,
      backoffMaxMs: 30_000,
      resyncedHoldMs: 3_000,
      random: Math.random,
      now: Date.now,
      ...opts,
    };
  }

  /** Subscribes a handler to a topic; returns its unsubscribe. */
  subscribe(topic: string, handler: TopicHandler): () => void {
    let t = this.topics.get(topic);
    if (!t) {
      t = {
        refs: 0,
        handlers: new Set(),
        seq: null,
        awaitingSnapshot: false,
        resyncPending: false,
        unsubscribeTimer: null,
      };
      this.topics.set(topic, t);
    }
    t.refs++;
    t.handlers.add(handler);
    if (t.unsubscribeTimer !== null) {
      // Re-subscribed inside the debounce window: the wire subscription never went away.
      clearTimeout(t.unsubscribeTimer);
      t.unsubscribeTimer = null;
    } else if (t.refs === 1) {
      this.ensureConnected();
      this.sendSubscribe(topic, t);
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.release(topic, handler);
    };
  }

  onStatus(listener: (s: StreamStatus) => void): () => void {
    this.statusListeners.add(listener);
    listener(this.status);
    return () => this.statusListeners.delete(listener);
  }

  getStatus(): StreamStatus {
    return this.status;
  }

  /** Last seq applied on a topic (null before its snapshot). */
  seqOf(topic: string): number | null {
    return this.topics.get(topic)?.seq ?? null;
  }

  /** Wire-subscribed topics (refs > 0 or inside the debounce window). */
  activeTopics(): string[] {
    return [...this.topics.keys()];
  }

  /**
   * Asks for a fresh snapshot of a topic held (another tab of the browser took it, through the
   * relay); not a resync: the state shown stays as it is until the snapshot replaces it.
   */
  refresh(topic: string): void {
    const t = this.topics.get(topic);
    if (!t || t.seq === null || t.awaitingSnapshot) return; // one is on the way already
    t.seq = null;
    this.sendSubscribe(topic, t);
  }

  /** Drops the socket and reconnects at once: after a token change, for one. */
  reconnectNow(): void {
    this.clearReconnect();
    this.dropSocket();
    this.setStatus({ attempt: 0, error: null, refusedCode: null });
    if (this.topics.size > 0) this.connect();
  }

  /**
   * The feed's source changed (another worker behind the gateway): the seqs held are another
   * stream's, so every topic starts again from a fresh snapshot on a new socket, shown as a resync.
   */
  switchSource(): void {
    for (const t of this.topics.values()) {
      t.seq = null;
      t.awaitingSnapshot = true;
      t.resyncPending = true;
    }
    this.setStatus({ watermark: 0 });
    this.reconnectNow();
  }

  dispose(): void {
    this.disposed = true;
    this.clearReconnect();
    if (this.resyncedTimer !== null) clearTimeout(this.resyncedTimer);
    for (const t of this.topics.values()) if (t.unsubscribeTimer !== null) clearTimeout(t.unsubscribeTimer);
    this.topics.clear();
    this.dropSocket();
    this.setStatus({ state: 'idle', nextRetryAtMs: null });
  }

  private release(topic: string, handler: TopicHandler): void {
    releaseTopic(this.topics, topic, handler, this.opts.unsubscribeDelayMs, () =>
      this.send({ type: 'unsubscribe', topics: [topic] }),
    );
  }

  private ensureConnected(): void {
    if (this.disposed || this.socket || this.reconnectTimer !== null) return;
    this.connect();
  }

  private connect(): void {
    const url = typeof this.opts.url === 'function' ? this.opts.url() : this.opts.url;
    this.setStatus({ state: this.everOpened ? 'reconnecting' : 'connecting', nextRetryAtMs: null });
    const socket = this.opts.createSocket(url);
    this.socket = socket;
    socket.onopen = () => {
      if (this.socket !== socket) return;
      const resumed = this.everOpened;
      this.everOpened = true;
      const token = this.opts.token?.();
      if (token) socket.send(JSON.stringify({ type: 'auth', token }));
      this.subscribeAll();
      this.setStatus({ state: resumed ? this.status.state : 'live', attempt: 0, nextRetryAtMs: null });
      if (!resumed) return;
      // Reconnected: live once every resumed topic answered; a snapshot among the answers means resync.
      if (![...this.topics.values()].some((t) => t.awaitingSnapshot)) this.setStatus({ state: 'live' });
    };
    socket.onmessage = (ev) => {
      if (this.socket !== socket) return;
      this.onMessage(ev.data);
    };
    socket.onclose = (ev) => {
      if (this.socket !== socket) return;
      this.socket = null;
      const code = (ev as { code?: number } | null)?.code;
      if (code === 4401 || code === 4403) {
        // Refused, not lost: retrying with the same token would only be refused again.
        this.setStatus({
          state: 'denied',
          nextRetryAtMs: null,
          refusedCode: code,
          error: this.status.error ?? `refused (${code})`,
        });
        return;
      }
      this.scheduleReconnect();
    };
    socket.onerror = () => {
      /* onclose follows and decides */
    };
  }

  private scheduleReconnect(): void {
    if (this.disposed) return;
    if (this.topics.size === 0) {
      this.setStatus({ state: 'idle', nextRetryAtMs: null });
      return;
    }
    const attempt = this.status.attempt + 1;
    const delay = backoffDelayMs(attempt, this.opts.backoffBaseMs, this.opts.backoffMaxMs, this.opts.random);
    this.setStatus({ state: 'reconnecting', attempt, nextRetryAtMs: this.opts.now() + delay });
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      this.connect();
    }, delay);
  }

  private onMessage(raw: unknown): void {
    let msg: StreamMessage & { type?: string; error?: string };
    try {
      msg = JSON.parse(typeof raw === 'string' ? raw : String(raw)) as StreamMessage & {
        type?: string;
        error?: string;
      };
    } catch {
      return;
    }
    if (msg.type !== undefined) {
      if (msg.type === 'error') this.setStatus({ error: msg.error ?? 'feed error' });
      return; // ready, heartbeat, pong
    }
    const t = this.topics.get(msg.topic);
    if (!t) return;
    switch (msg.kind) {
      case 'snapshot': {
        const wasResync = t.resyncPending || t.seq !== null;
        t.seq = msg.seq;
        t.awaitingSnapshot = false;
        t.resyncPending = false;
        this.deliver(t, msg);
        if (wasResync) this.markResynced();
        else this.settleIfAnswered();
        return;
      }
      case 'resync':
        // The server could not replay from our seq (ring overrun, slow client); its snapshot follows.
        t.seq = null;
        t.awaitingSnapshot = true;
        t.resyncPending = true;
        return;
      case 'delta': {
        if (t.seq === null) return; // no snapshot to apply it to yet
        if (msg.seq <= t.seq) return; // replayed twice: already applied
        if (msg.seq !== t.seq + 1) {
          // A gap: something was missed; never apply past it.
          t.seq = null;
          t.resyncPending = true;
          this.sendSubscribe(msg.topic, t);
          return;
        }
        t.seq = msg.seq;
        t.awaitingSnapshot = false;
        this.deliver(t, msg);
        this.settleIfAnswered();
        return;
      }
    }
  }

  private deliver(t: Topic, msg: StreamMessage): void {
    // The highest seq held now: after an engine restart the topics start over, and so does this.
    let watermark = 0;
    for (const topic of this.topics.values()) if (topic.seq !== null && topic.seq > watermark) watermark = topic.seq;
    if (watermark !== this.status.watermark) this.setStatus({ watermark });
    for (const h of [...t.handlers]) h(msg);
  }

  private settleIfAnswered(): void {
    if (this.status.state !== 'reconnecting' && this.status.state !== 'connecting') return;
    if (!this.socket || this.socket.readyState !== OPEN) return;
    if ([...this.topics.values()].some((t) => t.awaitingSnapshot)) return;
    this.setStatus({ state: 'live' });
  }

  private markResynced(): void {
    this.setStatus({ state: 'resynced' });
    if (this.resyncedTimer !== null) clearTimeout(this.resyncedTimer);
    this.resyncedTimer = setTimeout(() => {
      this.resyncedTimer = null;
      if (this.status.state === 'resynced') this.setStatus({ state: 'live' });
    }, this.opts.resyncedHoldMs);
  }

  private sendSubscribe(topic: string, t: Topic): void {
    t.awaitingSnapshot = t.seq === null;
    this.send(
      t.seq === null
        ? { type: 'subscribe', topics: [topic] }
        : { type: 'subscribe', topics: [topic], since: { [topic]: t.seq } },
    );
  }

  /** After (re)connecting: every held topic in one message, each from its last seq where known. */
  private subscribeAll(): void {
    if (this.topics.size === 0) return;
    const since: Record<string, number> = {};
    for (const [name, t] of this.topics) {
      t.awaitingSnapshot = t.seq === null;
      if (t.seq !== null) since[name] = t.seq;
    }
    const topics = [...this.topics.keys()];
    this.send(Object.keys(since).length ? { type: 'subscribe', topics, since } : { type: 'subscribe', topics });
  }

  private send(msg: object): void {
    if (this.socket && this.socket.readyState === OPEN) this.socket.send(JSON.stringify(msg));
  }

  private dropSocket(): void {
    const s = this.socket;
    this.socket = null;
    if (s) {
      s.onopen = s.onmessage = s.onclose = s.onerror = null;
      s.close();
    }
  }

  private clearReconnect(): void {
    if (this.reconnectTimer !== null) clearTimeout(this.reconnectTimer);
    this.reconnectTimer = null;
  }

  private setStatus(patch: Partial<StreamStatus>): void {
    this.status = { ...this.status, ...patch };
    for (const l of [...this.statusListeners]) l(this.status);
  }
}
