import type { Clock, TimerHandle } from './clock.js';

interface ManualTimer {
  readonly at: number;
  readonly seq: number;
  readonly fn: () => void;
  cancelled: boolean;
}

/**
 * A Clock that only moves when told to. Tests (ours and the lead's) use it to make timing
 * assertions exact: advance() fires due timers in time order, so "the window expired" or "the
 * dispatch timed out" happen at a chosen instant instead of after a real sleep.
 */
export class ManualClock implements Clock {
  #now: number;
  #seq = 0;
  #timers: ManualTimer[] = [];

  constructor(start = 0) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimer(fn: () => void, ms: number): TimerHandle {
    const timer: ManualTimer = { at: this.#now + Math.max(0, ms), seq: this.#seq++, fn, cancelled: false };
    this.#timers.push(timer);
    return timer;
  }

  clearTimer(handle: TimerHandle): void {
    (handle as ManualTimer).cancelled = true;
  }

  /** Number of timers still armed. */
  get pendingTimers(): number {
    return this.#timers.filter((t) => !t.cancelled).length;
  }

  /** Moves time forward by `ms`, firing every timer that falls due, earliest first. */
  advance(ms: number): void {
    this.advanceTo(this.#now + ms);
  }

  advanceTo(target: number): void {
    for (;;) {
      this.#timers = this.#timers.filter((t) => !t.cancelled);
      let next: ManualTimer | undefined;
      for (const t of this.#timers) {
        if (t.at <= target && (next === undefined || t.at < next.at || (t.at === next.at && t.seq < next.seq)))
          next = t;
      }
      if (next === undefined) break;
      this.#now = Math.max(this.#now, next.at);
      next.cancelled = true;
      next.fn();
    }
    this.#now = Math.max(this.#now, target);
  }
}
