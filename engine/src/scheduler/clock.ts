import { setClampedTimeout } from '@hloserve/common/timers';

/**
 * Time as the scheduler and the weight cache see it. Injected so that tests can drive deadlines,
 * batching windows and dispatch timeouts without sleeping, and so that a deadline computed by a
 * transport and the scheduler's "now" always share one timebase.
 */
export interface Clock {
  /** Milliseconds; monotone. Deadlines given to the scheduler are absolute values of this clock. */
  now(): number;
  /** Runs `fn` once after `ms` milliseconds (or later). */
  setTimer(fn: () => void, ms: number): TimerHandle;
  clearTimer(handle: TimerHandle): void;
}

/** Opaque to callers; each Clock knows what it handed out. */
export type TimerHandle = object;

/**
 * Epoch milliseconds that never go backwards: performance.now() is monotone, and anchoring it at
 * timeOrigin keeps values comparable with Date.now() for deadlines built from wall-clock budgets.
 */
// timeOrigin is fixed for the life of the process; its getter costs as much as now() itself.
const ORIGIN = performance.timeOrigin;

export const systemClock: Clock = {
  now: () => ORIGIN + performance.now(),
  // Timers stay referenced: the scheduler arms one only while a caller waits on it (a batching
  // window, a queued deadline, a running dispatch's watchdog). Unreferenced, a process with nothing
  // else pending (an embedder, a bench) exited with the request never answered.
  setTimer: (fn, ms) => setClampedTimeout(fn, ms),
  clearTimer: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};
