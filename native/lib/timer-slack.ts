import { threadAddon } from './thread-addon.js';

/**
 * Sets the calling thread's timer slack in nanoseconds (Linux keeps it per thread; 50 µs by
 * default): a timed wait on this thread then ends at most that late. False where the addon is
 * missing or the system refused; the thread keeps its slack.
 */
export function setThreadTimerSlack(ns: number): boolean {
  try {
    return threadAddon()?.setTimerSlack(ns) ?? false;
  } catch {
    return false;
  }
}

/** The calling thread's timer slack in nanoseconds; -1 where unknown (no addon, not Linux). */
export function threadTimerSlack(): number {
  try {
    return threadAddon()?.timerSlack() ?? -1;
  } catch {
    return -1;
  }
}
