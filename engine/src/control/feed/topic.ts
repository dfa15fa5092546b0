/**
 * One topic of the live feed. A keyed topic holds a map (models by name, ...) and sends what
 * changed as `{upsert, remove}` deltas; applying every delta in order to the snapshot gives the
 * next snapshot. A timed keyed topic (metric ticks) is set at an instant, with a stamp (the
 * instant and figures about the whole): each setting sends a delta, even an empty one, carrying
 * its stamp, and the snapshot carries the last stamp and, as `recent`, the last few. A log
 * topic (events) sends the entries appended together as one delta and keeps the last few as its
 * snapshot. Each keeps a bounded ring of recent deltas for resuming clients.
 */
import { sameJson } from './same-json.js';

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
/**
 * And at most this many characters of them: a metrics delta at a thousand busy models is some
 * 70 kB, and 256 of those would hold 18 MB per topic for resuming clients, who resync instead.
 */
const RING_CHARS = 4 * 1024 * 1024;
/** The most entries one log delta carries (a bound on a message, and on the ring's bytes). */
export const LOG_DELTA_ITEMS = 64;

/** A log topic's delta: entries appended together, oldest first. */
export interface LogDelta {
  readonly items: readonly unknown[];
}

/** What a timed topic's setting says about itself: its instant, and figures about the whole. */
export interface TopicStamp {
  readonly at: number;
  readonly [field: string]: unknown;
}

/**
 * How a keyed topic paces changes that only follow the load (queue depths, last-used times): those
 * are published only when `due()` says so (the feed's load turn, once a second); any other change
 * publishes at once, carrying the held load changes with it.
 */
export interface TopicPace {
  /** True when going from `prev` to `next` changes nothing but load fields. */
  readonly loadOnly: (prev: unknown, next: unknown) => boolean;
  readonly due: () => boolean;
}

export class Topic {
  readonly name: string;
  readonly keyed: boolean;
  #seq = 0;
  readonly #state = new Map<string, unknown>();
  readonly #log: unknown[] = [];
  readonly #keep: number;
  /** Recent deltas as serialized messages (each serialized once, whatever the fan-out). */
  readonly #ring: { seq: number; text: string }[] = [];
  #ringChars = 0;
  readonly #publish: (topic: Topic, text: string) => void;
  readonly #pace: TopicPace | null;
  /** On a timed topic, the stamps of the last settings, oldest first. */
  readonly #stamps: TopicStamp[] = [];

  constructor(
    name: string,
    keyed: boolean,
    publish: (topic: Topic, text: string) => void,
    /** The entries a log topic's snapshot holds, or the stamps a timed topic's. */
    keep = 50,
    pace: TopicPace | null = null,
  ) {
    this.name = name;
    this.keyed = keyed;
    this.#publish = publish;
    this.#keep = keep;
    this.#pace = pace;
  }

  get seq(): number {
    return this.#seq;
  }

  /**
   * Replaces the keyed state; publishes one delta when anything changed. On a paced topic, a
   * change of load fields alone is not taken in until the pace is due: the next call sees it again
   * (the state and the deltas stay consistent, the delta just comes later). With a stamp (a timed
   * topic), a delta is sent even when nothing changed: it says the entries held at its instant.
   */
  set(items: ReadonlyMap<string, unknown>, stamp?: TopicStamp): void {
    const gone: string[] = [];
    for (const k of this.#state.keys()) if (!items.has(k)) gone.push(k);
    this.#change(items, gone, stamp);
  }

  /**
   * Changes some entries and leaves the others as they are: `items` are upserted where they
   * differ, `gone` removed where held. Paced as set() is.
   */
  patch(items: ReadonlyMap<string, unknown>, gone: Iterable<string>): void {
    const remove: string[] = [];
    for (const k of gone) if (this.#state.has(k) && !items.has(k)) remove.push(k);
    this.#change(items, remove);
  }

  #change(items: ReadonlyMap<string, unknown>, remove: string[], stamp?: TopicStamp): void {
    const upsert: Record<string, unknown> = {};
    let changed = remove.length > 0;
    let loadOnly = remove.length === 0;
    for (const [k, v] of items) {
      if (!this.#state.has(k)) loadOnly = false;
      else if (sameJson(this.#state.get(k), v)) continue;
      else if (loadOnly && this.#pace && !this.#pace.loadOnly(this.#state.get(k), v)) loadOnly = false;
      upsert[k] = v;
      changed = true;
    }
    if (stamp !== undefined) {
      this.#stamps.push(stamp);
      if (this.#stamps.length > this.#keep) this.#stamps.shift();
      this.#apply(upsert, remove);
      return this.#emit({ ...stamp, upsert, remove } satisfies KeyedDelta);
    }
    if (!changed) return;
    if (this.#pace && loadOnly && !this.#pace.due()) return;
    this.#apply(upsert, remove);
    this.#emit({ upsert, remove } satisfies KeyedDelta);
  }

  #apply(upsert: Record<string, unknown>, remove: readonly string[]): void {
    for (const [k, v] of Object.entries(upsert)) this.#state.set(k, v);
    for (const k of remove) this.#state.delete(k);
  }

  /**
   * Appends entries to a log topic, oldest first, as one delta `{items}` per LOG_DELTA_ITEMS: the
   * event log stores events in batches, and under churn (hundreds a second) a message per event
   * cost every client a send, a frame and a parse each.
   */
  append(entries: readonly unknown[]): void {
    for (const e of entries) {
      this.#log.push(e);
      if (this.#log.length > this.#keep) this.#log.shift();
    }
    for (let i = 0; i < entries.length; i += LOG_DELTA_ITEMS)
      this.#emit({ items: entries.slice(i, i + LOG_DELTA_ITEMS) } satisfies LogDelta);
  }

  #emit(data: unknown): void {
    this.#seq++;
    const text = JSON.stringify({ topic: this.name, seq: this.#seq, kind: 'delta', data } satisfies FeedMessage);
    this.#ring.push({ seq: this.#seq, text });
    this.#ringChars += text.length;
    while (this.#ring.length > RING || (this.#ringChars > RING_CHARS && this.#ring.length > 1))
      this.#ringChars -= this.#ring.shift()!.text.length;
    this.#publish(this, text);
  }

  snapshotText(): string {
    const last = this.#stamps[this.#stamps.length - 1];
    const items = this.keyed ? Object.fromEntries(this.#state) : [...this.#log];
    const data = last === undefined ? { items } : { ...last, items, recent: this.#stamps };
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
