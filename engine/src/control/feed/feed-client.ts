/**
 * One connected feed client. Sends never wait: when the socket's unsent bytes pass the bound the
 * client is marked for resync and gets no more deltas; once its buffer drains it is told to
 * resync and sent fresh snapshots of its topics. So a slow client costs a bounded buffer, never
 * engine time and never growing memory.
 */
import type { Topic } from './topic.js';

export interface FeedSocket {
  readonly bufferedAmount: number;
  readonly readyState: number;
  send(text: string): void;
}

export interface FeedClientLimits {
  /** Above this many unsent bytes the client is marked for resync. */
  readonly highWaterBytes: number;
  /** Below this it is sent snapshots again. */
  readonly lowWaterBytes: number;
}

const OPEN = 1;

export class FeedClient {
  readonly socket: FeedSocket;
  readonly topics = new Set<Topic>();
  #resync = false;
  readonly #limits: FeedClientLimits;
  /** How many times this client fell behind (for tests and logs). */
  resyncs = 0;

  constructor(socket: FeedSocket, limits: FeedClientLimits) {
    this.socket = socket;
    this.#limits = limits;
  }

  get markedForResync(): boolean {
    return this.#resync;
  }

  /** Sends a delta unless the client is behind; marks it when its buffer is over the bound. */
  deliver(text: string): void {
    if (this.#resync || this.socket.readyState !== OPEN) return;
    if (this.socket.bufferedAmount > this.#limits.highWaterBytes) {
      this.#resync = true;
      this.resyncs++;
      return;
    }
    this.socket.send(text);
  }

  /** Called on every tick: a marked client whose buffer drained is resynced. */
  maybeRecover(): void {
    if (!this.#resync || this.socket.readyState !== OPEN) return;
    if (this.socket.bufferedAmount > this.#limits.lowWaterBytes) return;
    this.#resync = false;
    for (const t of this.topics) this.resync(t);
  }

  resync(t: Topic): void {
    this.socket.send(JSON.stringify({ topic: t.name, seq: t.seq, kind: 'resync', data: null }));
    this.socket.send(t.snapshotText());
  }

  /** Subscribes; with `since`, replays the missed deltas if the ring still holds them, else resyncs. */
  subscribe(t: Topic, since: number | undefined): void {
    this.topics.add(t);
    if (since === undefined) return void this.socket.send(t.snapshotText());
    const missed = t.deltasSince(since);
    if (missed === null) return this.resync(t);
    for (const text of missed) this.socket.send(text);
  }
}
