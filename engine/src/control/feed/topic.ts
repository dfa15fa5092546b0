/**
 * One topic of the live feed. A keyed topic holds a map (models by name, ...) and sends what
 * changed as `{upsert, remove}` deltas; applying every delta in order to the snapshot gives the
 * next snapshot. A log topic (events, metric ticks) sends each entry as a delta and keeps the
 * last few as its snapshot. Either keeps a bounded ring of recent deltas for resuming clients.
 */
import { isDeepStrictEqual } from 'node:util';

export type FeedKind = 'snapshot' | 'delta' | 'resync';

export interface FeedMessage {
  readonly topic: string;
  readonly seq: number;
  readonly kind: FeedKind;
  readonly data: unknown;
}

export interface KeyedDelta {
  readonly upsert: Record<string, unknown>;
  readonly remove: string[];
}

const RING = 256;

export class Topic {
  readonly name: string;
  readonly keyed: boolean;
  #seq = 0;
  readonly #state = new Map<string, unknown>();
  readonly #log: unknown[] = [];
  readonly #logKeep: number;
  /** Recent deltas as serialized messages (each serialized once, whatever the fan-out). */
  readonly #ring: { seq: number; text: string }[] = [];
  readonly #publish: (topic: Topic, text: string) => void;

  constructor(name: string, keyed: boolean, publish: (topic: Topic, text: string) => void, logKeep = 50) {
    this.name = name;
    this.keyed = keyed;
    this.#publish = publish;
    this.#logKeep = logKeep;
  }

  get seq(): number {
    return this.#seq;
  }

  /** Replaces the keyed state; publishes one delta when anything changed. */
  set(items: ReadonlyMap<string, unknown>): void {
    const upsert: Record<string, unknown> = {};
    const remove: string[] = [];
    let changed = false;
    for (const [k, v] of items) {
      if (!this.#state.has(k) || !isDeepStrictEqual(this.#state.get(k), v)) {
        upsert[k] = v;
        this.#state.set(k, v);
        changed = true;
      }
    }
    for (const k of [...this.#state.keys()]) {
      if (!items.has(k)) {
        remove.push(k);
        this.#state.delete(k);
        changed = true;
      }
    }
    if (changed) this.#emit({ upsert, remove } satisfies KeyedDelta);
  }

  /** Appends one entry to a log topic. */
  append(entry: unknown): void {
    this.#log.push(entry);
    if (this.#log.length > this.#logKeep) this.#log.shift();
    this.#emit(entry);
  }

  #emit(data: unknown): void {
    this.#seq++;
    const text = JSON.stringify({ topic: this.name, seq: this.#seq, kind: 'delta', data } satisfies FeedMessage);
    this.#ring.push({ seq: this.#seq, text });
    if (this.#ring.length > RING) this.#ring.shift();
    this.#publish(this, text);
  }

  snapshotText(): string {
    const data = this.keyed ? { items: Object.fromEntries(this.#state) } : { items: [...this.#log] };
    return JSON.stringify({ topic: this.name, seq: this.#seq, kind: 'snapshot', data } satisfies FeedMessage);
  }

  /** The deltas after `since`, or null when the ring no longer reaches back that far. */
  deltasSince(since: number): string[] | null {
    if (since > this.#seq || since < 0) return null;
    if (since === this.#seq) return [];
    const first = this.#ring[0];
    if (first === undefined || first.seq > since + 1) return null;
    return this.#ring.filter((d) => d.seq > since).map((d) => d.text);
  }
}
