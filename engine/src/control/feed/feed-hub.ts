/**
 * The live feed's topics and clients. A sampler reads the engine through the ModelPort on a
 * timer and publishes what changed: so the engine never calls into the feed, and a burst of
 * changes between two ticks costs one delta, not one per change.
 *
 * Reading every model costs the serving thread in proportion to the repository (some 10-20 ms for
 * a thousand), so a tick reads every model only as often as keeps that under FULL_READ_SHARE of
 * the thread, and at every load turn; the ticks between read only the models that the engine's
 * events named since (an eviction, a load, a state, a policy, a drain). With a few dozen models
 * every tick reads every model.
 *
 * Changes that only follow the load (queue depths, last use) and the metric history's tick go
 * out together at the load turn, once per `loadMs`: a client then gets one burst of messages a
 * second, not two some hundreds of ms apart (each burst wakes a browser's network, IO and page
 * threads, and a page that is shown schedules a frame for it).
 */
import type { ModelPort, ModelView } from '../api/model-port.js';
import { sameJson } from './same-json.js';
import { FeedClient, type FeedClientLimits, type FeedSocket } from './feed-client.js';
import { Topic, type TopicPace } from './topic.js';

export const TOPICS = ['models', 'residency', 'queues', 'events', 'metrics'] as const;
export type TopicName = (typeof TOPICS)[number];

export interface FeedHubOptions {
  readonly port: ModelPort;
  /** How often state topics are sampled. */
  readonly sampleMs: number;
  /** How often the load turn comes: load-only changes, the metric tick (default 1 s). */
  readonly loadMs?: number;
  readonly limits: FeedClientLimits;
  /** The clock, ms (tests); performance.now by default. */
  readonly now?: () => number;
}

/** The share of the serving thread that reading every model may take, tick after tick. */
export const FULL_READ_SHARE = 0.01;

const isObject = (x: unknown): x is object => typeof x === 'object' && x !== null;

/** A model's queue: every field follows the load (a queue appearing or going is not load). */
export const queueLoadOnly = (prev: unknown, next: unknown): boolean => isObject(prev) && isObject(next);

/** Residency: leases and the last use move with every request; the floor, where and loads do not. */
export function residencyLoadOnly(prev: unknown, next: unknown): boolean {
  if (!isObject(prev) || !isObject(next)) return false;
  const strip = (r: object) => ({ ...r, leases: 0, lastUsedAt: 0 });
  return sameJson(strip(prev), strip(next));
}

const modelEntry = (m: ModelView) => ({
  name: m.name,
  version: m.version,
  state: m.state,
  reason: m.reason,
  batchSizes: m.batchSizes,
  policy: m.policy,
  drain: m.drain,
});

export class FeedHub {
  readonly #port: ModelPort;
  readonly #topics = new Map<TopicName, Topic>();
  readonly #clients = new Set<FeedClient>();
  readonly #limits: FeedClientLimits;
  readonly #timer: NodeJS.Timeout;
  readonly #unfollow: () => void;
  /** Models an event named since the last read of them; read at the next tick. */
  readonly #named = new Set<string>();
  /** An event named no model (it may concern any): the next tick reads every model. */
  #allNamed = false;
  readonly #sampleMs: number;
  readonly #loadMs: number;
  #wholeEveryMs: number;
  #wholeAt = -Infinity;
  readonly #now: () => number;
  /** When the last load turn came; the read that the constructor makes counts as one. */
  #loadTurnAt: number;
  /** A load turn's read is under way: the paced topics publish what they held. */
  #inLoadTurn = false;
  readonly #loadTurnListeners = new Set<() => void>();

  constructor(o: FeedHubOptions) {
    this.#port = o.port;
    this.#limits = o.limits;
    // Under load every sample changes the queues and the last-use times: without pacing each client
    // would get two messages per sample, and each visible console tab would render them.
    this.#loadMs = o.loadMs ?? 1000;
    this.#now = o.now ?? (() => performance.now());
    this.#sampleMs = o.sampleMs;
    this.#wholeEveryMs = o.sampleMs;
    const due = () => this.#inLoadTurn;
    const paces: Partial<Record<TopicName, TopicPace>> = {
      queues: { loadOnly: queueLoadOnly, due },
      residency: { loadOnly: residencyLoadOnly, due },
    };
    for (const name of TOPICS) {
      const fanOut = (t: Topic, text: string) => this.#fanOut(t, text);
      // The metrics topic's snapshot carries five minutes of ticks' stamps: a console's charts.
      const keep = name === 'metrics' ? 300 : 50;
      this.#topics.set(name, new Topic(name, name !== 'events', fanOut, keep, paces[name] ?? null));
    }
    this.#unfollow = o.port.subscribe((e) => {
      // With nobody attached nothing is read, and the first client's attach reads every model.
      if (this.#clients.size === 0) return;
      if (e.model === null) this.#allNamed = true;
      else this.#named.add(e.model);
      // A rename's event names the new model; the old name goes from the topics too.
      if (typeof e.data.from === 'string') this.#named.add(e.data.from);
    });
    this.sample();
    this.#loadTurnAt = this.#now();
    this.#timer = setInterval(() => this.tick(), o.sampleMs);
    this.#timer.unref();
  }

  /** Runs `f` at every load turn, after the feed's own reads (the metric history's tick); returns its removal. */
  onLoadTurn(f: () => void): () => void {
    this.#loadTurnListeners.add(f);
    return () => this.#loadTurnListeners.delete(f);
  }

  topic(name: TopicName): Topic {
    return this.#topics.get(name)!;
  }

  isTopic(name: string): name is TopicName {
    return this.#topics.has(name as TopicName);
  }

  get clientCount(): number {
    return this.#clients.size;
  }

  /** Clients now left out of delta fan-out until their buffer drains. */
  markedForResync(): number {
    let n = 0;
    for (const c of this.#clients) if (c.markedForResync) n++;
    return n;
  }

  attach(socket: FeedSocket): FeedClient {
    if (this.#clients.size === 0) this.sample();
    const c = new FeedClient(socket, this.#limits);
    this.#clients.add(c);
    return c;
  }

  detach(c: FeedClient): void {
    this.#clients.delete(c);
  }

  /**
   * What the timer runs every `sampleMs` (tests call it to force a tick). Reads only while someone
   * listens: a read of every model costs tens of ms of the serving thread at a thousand models, and
   * with nobody to tell there is nothing to keep current; the first client to attach reads first.
   * A position a route answered meanwhile (seq) is older than its data, which is harmless: a delta
   * upserts or removes whole entries, so resuming from that seq replays, on top of the newer data,
   * changes it already holds.
   */
  tick(): void {
    const now = this.#now();
    // Half a tick's grace: the turn lands on the tick nearest a whole `loadMs`, not the one after.
    const loadTurn = now - this.#loadTurnAt >= this.#loadMs - this.#sampleMs / 2;
    if (loadTurn) this.#loadTurnAt = now;
    if (this.#clients.size > 0) {
      if (loadTurn) {
        this.#inLoadTurn = true;
        try {
          this.sample();
        } finally {
          this.#inLoadTurn = false;
        }
      } else if (this.#allNamed || now - this.#wholeAt >= this.#wholeEveryMs) this.sample();
      else if (this.#named.size > 0) this.#sampleNamed();
    }
    if (loadTurn) for (const f of this.#loadTurnListeners) f();
  }

  /** Reads every model and publishes the changes (also called by tests to force a tick). */
  sample(): void {
    const t0 = this.#now();
    this.#named.clear();
    this.#allNamed = false;
    const models = this.#port.models();
    const worker = this.#port.worker();
    this.topic('models').set(new Map(models.map((m) => [m.name, modelEntry(m)])));
    const residency = new Map<string, unknown>(models.map((m) => [m.name, m.residency]));
    for (const d of worker.devices) residency.set(`device:${d.ordinal}`, d);
    this.topic('residency').set(residency);
    this.topic('queues').set(new Map(models.map((m) => [m.name, m.queue])));
    for (const c of this.#clients) c.maybeRecover();
    const took = this.#now() - t0;
    this.#wholeAt = t0;
    // The load turn reads every model anyway: a longer interval than its own means only load turns.
    this.#wholeEveryMs = Math.min(this.#loadMs, Math.max(this.#sampleMs, took / FULL_READ_SHARE));
  }

  /** Reads the models events named since the last tick, and the devices; publishes their changes. */
  #sampleNamed(): void {
    const names = [...this.#named];
    this.#named.clear();
    const models = new Map<string, unknown>();
    const residency = new Map<string, unknown>();
    const queues = new Map<string, unknown>();
    for (const name of names) {
      const m = this.#port.model(name);
      if (m === undefined) continue;
      models.set(name, modelEntry(m));
      residency.set(name, m.residency);
      queues.set(name, m.queue);
    }
    for (const d of this.#port.worker().devices) residency.set(`device:${d.ordinal}`, d);
    this.topic('models').patch(models, names);
    this.topic('residency').patch(residency, names);
    this.topic('queues').patch(queues, names);
    for (const c of this.#clients) c.maybeRecover();
  }

  #fanOut(t: Topic, text: string): void {
    for (const c of this.#clients) {
      if (!c.topics.has(t)) continue;
      // A client that was behind gets its snapshot instead of this delta once it has caught up.
      if (c.markedForResync) c.maybeRecover();
      else c.deliver(text);
    }
  }

  close(): void {
    clearInterval(this.#timer);
    this.#unfollow();
    this.#clients.clear();
  }
}
