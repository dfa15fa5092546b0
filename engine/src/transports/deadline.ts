import type { Params } from '@hloserve/common/wire';
import { invalidArgument, quote } from '@hloserve/common/errors';
import { MAX_TIMER_MS } from '@hloserve/common/timers';
import { systemClock } from '../scheduler/clock.js';

/**
 * A deadline further away than a timer can wait (about 24.8 days) is no practical deadline: it is
 * dropped rather than kept, so nothing downstream arms a timer it cannot hold.
 */
function practical(deadline: number | null, nowMs: number): number | null {
  return deadline !== null && deadline - nowMs > MAX_TIMER_MS ? null : deadline;
}

/**
 * The earliest of the deadlines a request carries, in epoch milliseconds: the transport's own
 * (grpc-timeout, or the HTTP x-timeout-ms header) and Triton's `timeout` request parameter (µs).
 * Values are on the scheduler's clock (systemClock), so a deadline and the scheduler's "now"
 * never drift apart.
 */
export function requestDeadline(
  transportDeadlineMs: number | null,
  params: Params,
  nowMs = systemClock.now(),
): number | null {
  let deadline = practical(transportDeadlineMs, nowMs);
  const t = params.timeout;
  if (t !== undefined) {
    if (typeof t !== 'number' || Number.isNaN(t) || t < 0)
      throw invalidArgument(`parameter 'timeout' must be a non-negative number of microseconds, not ${quote(t)}`);
    const d = practical(nowMs + t / 1000, nowMs);
    if (t > 0 && d !== null) deadline = deadline === null ? d : Math.min(deadline, d);
  }
  return deadline;
}
