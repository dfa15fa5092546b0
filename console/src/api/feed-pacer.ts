/**
 * Paces live updates onto the screen. The engine samples its state every 250 ms, so under load a
 * page receives 8-10 feed messages a second (residency and queues each change at every sample);
 * rendering each one costs a visible tab a React render, a style and layout pass, a paint and a
 * compositor frame. The pacer holds the messages' cache writes and applies them together at most
 * once per interval (one render for all of them), in arrival order, so the folds see exactly the
 * sequence they would have seen one by one.
 *
 * A write that arrives after a quiet interval is applied at once (a click's answer on the feed is
 * not held back); one that arrives sooner waits for the end of the interval. A snapshot (first
 * data, resync) flushes at once, everything held before it first.
 */
export interface FeedPacerOptions {
  /** The shortest time between two flushes, ms. */
  readonly intervalMs: number;
  /** Runs a flush's writes: the console wraps them in one notification batch. */
  readonly batch?: (run: () => void) => void;
  readonly now?: () => number;
  readonly setTimer?: (fn: () => void, ms: number) => unknown;
  readonly clearTimer?: (t: unknown) => void;
}

export class FeedPacer {
  #intervalMs: number;
  readonly #batch: (run: () => void) => void;
  readonly #now: () => number;
  readonly #setTimer: (fn: () => void, ms: number) => unknown;
  readonly #clearTimer: (t: unknown) => void;
  #pending: (() => void)[] = [];
  #timer: unknown = null;
  #lastFlush = -Infinity;
  readonly #listeners = new Set<() => void>();
  #flushes = 0;

  constructor(o: FeedPacerOptions) {
    this.#intervalMs = o.intervalMs;
    this.#batch = o.batch ?? ((run) => run());
    this.#now = o.now ?? (() => performance.now());
    this.#setTimer = o.setTimer ?? ((fn, ms) => setTimeout(fn, ms));
    this.#clearTimer = o.clearTimer ?? ((t) => clearTimeout(t as ReturnType<typeof setTimeout>));
  }

  /** Holds a cache write until the next flush; `now` flushes at once (a snapshot). */
  enqueue(write: () => void, now = false): void {
    this.#pending.push(write);
    if (now) return this.flush();
    this.#flushWhenDue();
  }

  /**
   * A new shortest time between two flushes (the Settings screen's choice): held writes are
   * applied when the new interval since the last flush ends, at once if it already has.
   */
  setIntervalMs(ms: number): void {
    this.#intervalMs = ms;
    if (this.#timer !== null) this.#clearTimer(this.#timer);
    this.#timer = null;
    if (this.#pending.length > 0) this.#flushWhenDue();
  }

  #flushWhenDue(): void {
    const wait = this.#lastFlush + this.#intervalMs - this.#now();
    if (wait <= 0) return this.flush();
    this.#timer ??= this.#setTimer(() => {
      this.#timer = null;
      this.flush();
    }, wait);
  }

  /** Applies every held write now, in order. */
  flush(): void {
    if (this.#timer !== null) {
      this.#clearTimer(this.#timer);
      this.#timer = null;
    }
    const writes = this.#pending;
    if (writes.length === 0) return;
    this.#lastFlush = this.#now();
    this.#pending = [];
    this.#flushes++;
    this.#batch(() => {
      for (const w of writes) w();
      for (const l of [...this.#listeners]) l();
    });
  }

  get pending(): number {
    return this.#pending.length;
  }

  /** How many flushes have applied writes: a value that changes once per rendered update. */
  get flushes(): number {
    return this.#flushes;
  }

  /**
   * Called after each flush that applied writes, its writes applied, inside the flush's batch: a
   * listener that notifies through the batch (the banner's watermark) is heard with the writes'
   * own notifications, in one render, so a flush costs the page one frame, not two.
   */
  onFlush(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}
