import type { Params } from '@hloserve/common/wire';
import { invalidArgument } from '@hloserve/common/errors';
import { systemClock } from '../scheduler/clock.js';

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
  let deadline = transportDeadlineMs;
  const t = params.timeout;
  if (t !== undefined) {
    if (typeof t !== 'number' || !Number.isFinite(t) || t < 0)
      throw invalidArgument("parameter 'timeout' must be a non-negative number of microseconds");
    if (t > 0) {
      const d = nowMs + t / 1000;
      deadline = deadline === null ? d : Math.min(deadline, d);
    }
  }
  return deadline;
}
