/**
 * setTimeout holds a signed 32-bit millisecond delay. A larger one (a deadline days away, a
 * Triton `timeout` of 2^63-1 µs) is not rejected: Node warns and fires after 1 ms, which turns a
 * timer that re-arms itself into a busy loop. Every timer in hloserve goes through clampTimerMs.
 */
export const MAX_TIMER_MS = 2_147_483_647;

/** A delay setTimeout keeps as given: NaN and negatives become 0, anything past the cap the cap. */
export function clampTimerMs(ms: number): number {
  if (!(ms > 0)) return 0;
  return ms > MAX_TIMER_MS ? MAX_TIMER_MS : ms;
}

/** setTimeout with the delay clamped; a timer that fires at the cap simply re-checks and re-arms. */
export function setClampedTimeout(fn: () => void, ms: number): ReturnType<typeof setTimeout> {
  return setTimeout(fn, clampTimerMs(ms));
}
