/**
 * Engine events, numbered by the store (the seq survives restarts), then streamed on the feed's
 * `events` topic in that order. Writes are chained so the stored order is the emitted order.
 *
 * Events are stored in batches: those recorded within BATCH_MS of the first (and while the
 * previous batch is written) go in one statement. A repository of a thousand models under a Zipf
 * load evicts and loads weights some 600 times a second, and an INSERT per event held the serving
 * thread 15 % of the time. The store keeps the newest EVENTS_KEPT events.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { EngineEvent, ModelPort } from '../api/model-port.js';
import type { Topic } from '../feed/topic.js';
import type { EventInsert, Store } from '../../state/store.js';
import type { Logger } from '../../log.js';

/** How long a batch gathers events after its first. */
export const BATCH_MS = 20;
/** The events the store keeps (the newest); older ones are removed in steps of PRUNE_STEP. */
export const EVENTS_KEPT = 100_000;
const PRUNE_STEP = 10_000;

export class EventLog {
  #chain: Promise<void> = Promise.resolve();
  /** The batch still gathering events, or null. */
  #open: EngineEvent[] | null = null;
  #prunedThrough = 0;
  readonly #unsubscribe: () => void;

  constructor(
    private readonly store: Store,
    port: ModelPort,
    private readonly topic: Topic,
    private readonly log: Logger,
    private readonly kept = EVENTS_KEPT,
  ) {
    this.#unsubscribe = port.subscribe((e) => void this.record(e));
  }

  /** Stores and streams one event (the control layer's own events come through here too). */
  record(e: EngineEvent): Promise<void> {
    if (this.#open === null) {
      const batch: EngineEvent[] = [];
      this.#open = batch;
      this.#chain = this.#chain.then(async () => {
        await delay(BATCH_MS);
        this.#open = null;
        await this.#write(batch);
      });
    }
    this.#open.push(e);
    return this.#chain;
  }

  async #write(recorded: readonly EngineEvent[]): Promise<void> {
    // An event whose data cannot be stored is left out alone, not with the rest of its batch.
    const batch: EngineEvent[] = [];
    const rows: EventInsert[] = [];
    for (const e of recorded) {
      try {
        rows.push({ at: e.at, kind: e.kind, model: e.model, data: JSON.stringify(e.data) });
        batch.push(e);
      } catch (err) {
        this.log.warn('event not stored', { kind: e.kind, error: (err as Error).message });
      }
    }
    if (batch.length === 0) return;
    let seqs: number[];
    try {
      seqs = await this.store.appendEvents(rows);
    } catch (err) {
      this.log.warn('events not stored', {
        count: batch.length,
        kinds: [...new Set(batch.map((e) => e.kind))],
        error: (err as Error).message,
      });
      return;
    }
    this.topic.append(batch.map((e, i) => ({ seq: seqs[i], at: e.at, kind: e.kind, model: e.model, data: e.data })));
    const through = seqs[seqs.length - 1]! - this.kept;
    if (through - this.#prunedThrough < Math.max(1, Math.min(PRUNE_STEP, Math.floor(this.kept / 10)))) return;
    try {
      await this.store.pruneEvents(through);
      this.#prunedThrough = through;
    } catch (err) {
      this.log.warn('old events not removed', { error: (err as Error).message });
    }
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
