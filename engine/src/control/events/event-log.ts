/**
 * Engine events, numbered by the store (the seq survives restarts), then streamed on the feed's
 * `events` topic in that order. Writes are chained so the stored order is the emitted order.
 */
import type { EngineEvent, ModelPort } from '../api/model-port.js';
import type { Topic } from '../feed/topic.js';
import type { Store } from '../../state/store.js';
import type { Logger } from '../../log.js';

export class EventLog {
  #chain: Promise<void> = Promise.resolve();
  readonly #unsubscribe: () => void;

  constructor(
    private readonly store: Store,
    port: ModelPort,
    private readonly topic: Topic,
    private readonly log: Logger,
  ) {
    this.#unsubscribe = port.subscribe((e) => void this.record(e));
  }

  /** Stores and streams one event (the control layer's own events come through here too). */
  record(e: EngineEvent): Promise<void> {
    this.#chain = this.#chain.then(async () => {
      try {
        const seq = await this.store.appendEvent(e);
        this.topic.append({ seq, at: e.at, kind: e.kind, model: e.model, data: e.data });
      } catch (err) {
        this.log.warn('event not stored', { kind: e.kind, error: (err as Error).message });
      }
    });
    return this.#chain;
  }

  /** Resolves once every event recorded so far is stored. */
  flushed(): Promise<void> {
    return this.#chain;
  }

  close(): Promise<void> {
    this.#unsubscribe();
    return this.#chain;
  }
}
