import type { Residency } from '../config/types.js';

/** What happened to a model, as the control API, the console and the log see it. */
export type LifecycleEventBody =
  | { readonly type: 'loading'; readonly model: string; readonly reason: 'start' | 'load' | 'reload' }
  | {
      readonly type: 'loaded';
      readonly model: string;
      readonly generation: number;
      readonly batchSizes: readonly number[];
      readonly weightBytes: number;
      readonly seconds: number;
    }
  | {
      readonly type: 'reloaded';
      readonly model: string;
      readonly generation: number;
      readonly previousGeneration: number;
      readonly batchSizes: readonly number[];
      readonly seconds: number;
    }
  | {
      readonly type: 'failed';
      readonly model: string;
      readonly error: string;
      /** True when an older version keeps serving. */
      readonly stillServing: boolean;
    }
  | {
      readonly type: 'unloaded';
      readonly model: string;
      /** Queued requests answered NOT_FOUND because the drain grace ran out. */
      readonly dropped: number;
    }
  | {
      readonly type: 'renamed';
      readonly model: string;
      readonly from: string;
      readonly generation: number;
      /** Always false: a rename reuses the executables. */
      readonly recompiled: false;
    }
  | { readonly type: 'evicted'; readonly model: string; readonly bytes: number; readonly reason: string }
  | { readonly type: 'residency-changed'; readonly model: string; readonly residency: Residency };

export type LifecycleEvent = LifecycleEventBody & {
  /** 1, 2, 3... in the order they happened; a subscriber resumes after the last it saw. */
  readonly seq: number;
  /** Epoch milliseconds. */
  readonly at: number;
};

export type LifecycleListener = (event: LifecycleEvent) => void;

/**
 * The lifecycle event stream: numbered, kept in a bounded ring for late subscribers, delivered
 * synchronously to live ones. A listener that throws is dropped from nothing and breaks nothing.
 */
export class LifecycleEvents {
  readonly #ring: LifecycleEvent[] = [];
  readonly #capacity: number;
  readonly #listeners = new Set<LifecycleListener>();
  #seq = 0;

  constructor(capacity = 1024) {
    this.#capacity = capacity;
  }

  /** The sequence number of the latest event (0 before any). */
  get lastSeq(): number {
    return this.#seq;
  }

  emit(body: LifecycleEventBody): LifecycleEvent {
    const event: LifecycleEvent = { ...body, seq: ++this.#seq, at: Date.now() };
    this.#ring.push(event);
    if (this.#ring.length > this.#capacity) this.#ring.shift();
    for (const l of this.#listeners) {
      try {
        l(event);
      } catch {
        // A subscriber's failure is its own; the stream goes on.
      }
    }
    return event;
  }

  /** Kept events with seq > afterSeq, oldest first (older ones may have left the ring). */
  since(afterSeq: number): LifecycleEvent[] {
    return this.#ring.filter((e) => e.seq > afterSeq);
  }

  /**
   * Replays the kept events after `afterSeq` (0 = all kept), then delivers new ones as they happen.
   * Returns the unsubscribe function.
   */
  subscribe(afterSeq: number, listener: LifecycleListener): () => void {
    for (const e of this.since(afterSeq)) listener(e);
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}
