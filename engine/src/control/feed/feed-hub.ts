/**
 * The live feed's topics and clients. A sampler reads the engine through the ModelPort on a
 * timer and publishes what changed: so the engine never calls into the feed, and a burst of
 * changes between two ticks costs one delta, not one per change.
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
  /** How often changes that only follow the load are published (queues, last use; default 1 s). */
  readonly loadMs?: number;
  readonly limits: FeedClientLimits;
}

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

  constructor(o: FeedHubOptions) {
    this.#port = o.port;
    this.#limits = o.limits;
    // Under load every sample changes the queues and the last-use times: without pacing each client
    // would get two messages per sample, and each visible console tab would render them.
    const everyMs = o.loadMs ?? 1000;
    const paces: Partial<Record<TopicName, TopicPace>> = {
      queues: { everyMs, loadOnly: queueLoadOnly },
      residency: { everyMs, loadOnly: residencyLoadOnly },
    };
    for (const name of TOPICS) {
      const fanOut = (t: Topic, text: string) => this.#fanOut(t, text);
      // The metrics topic's snapshot carries five minutes of ticks' stamps: a console's charts.
      const keep = name === 'metrics' ? 300 : 50;
      this.#topics.set(name, new Topic(name, name !== 'events', fanOut, keep, paces[name] ?? null));
    }
    this.sample();
    // Only while someone listens: a sample reads every model (tens of ms on the serving thread for
    // a thousand), and with nobody to tell there is nothing to keep current. The first client to
    // attach samples first. A position a route answered meanwhile (seq) is older than its data,
    // which is harmless: a delta upserts or removes whole entries, so resuming from that seq
    // replays, on top of the newer data, changes it already holds.
    this.#timer = setInterval(() => {
      if (this.#clients.size > 0) this.sample();
    }, o.sampleMs);
    this.#timer.unref();
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

  /** Reads the engine once and publishes the changes (also called by tests to force a tick). */
  sample(): void {
    const models = this.#port.models();
    const worker = this.#port.worker();
    this.topic('models').set(new Map(models.map((m) => [m.name, modelEntry(m)])));
    const residency = new Map<string, unknown>(models.map((m) => [m.name, m.residency]));
    for (const d of worker.devices) residency.set(`device:${d.ordinal}`, d);
    this.topic('residency').set(residency);
    this.topic('queues').set(new Map(models.map((m) => [m.name, m.queue])));
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
    this.#clients.clear();
  }
}
