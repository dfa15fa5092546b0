/**
 * The live feed's topics and clients. A sampler reads the engine through the ModelPort on a
 * timer and publishes what changed: so the engine never calls into the feed, and a burst of
 * changes between two ticks costs one delta, not one per change.
 */
import type { ModelPort, ModelView } from '../api/model-port.js';
import { FeedClient, type FeedClientLimits, type FeedSocket } from './feed-client.js';
import { Topic } from './topic.js';

export const TOPICS = ['models', 'residency', 'queues', 'events', 'metrics'] as const;
export type TopicName = (typeof TOPICS)[number];

export interface FeedHubOptions {
  readonly port: ModelPort;
  /** How often state topics are sampled. */
  readonly sampleMs: number;
  readonly limits: FeedClientLimits;
}

const modelEntry = (m: ModelView) => ({
  name: m.name,
  version: m.version,
  state: m.state,
  reason: m.reason,
  batchSizes: m.batchSizes,
  policy: m.policy,
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
    for (const name of TOPICS) {
      const keyed = name !== 'events' && name !== 'metrics';
      this.#topics.set(name, new Topic(name, keyed, (t, text) => this.#fanOut(t, text), name === 'metrics' ? 1 : 50));
    }
    this.sample();
    this.#timer = setInterval(() => this.sample(), o.sampleMs);
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
