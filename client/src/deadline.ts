/**
 * Per-call options shared by every client method: a deadline (absolute, or relative to the call's
 * start), a cancellation signal, and the retry policy. One overall deadline bounds every attempt
 * and every backoff wait.
 */
import { Status, ClientError } from './client-error.js';
import type { RetryPolicy } from './retry.js';

export interface CallOptions {
  /** Milliseconds from now; `null` for no deadline. Defaults to the client's `timeoutMs`. */
  timeoutMs?: number | null;
  /** An absolute deadline (a Date or epoch milliseconds); the earlier of this and `timeoutMs` wins. */
  deadline?: Date | number;
  /** Aborting it cancels the call at the server too (gRPC cancel, HTTP connection closed). */
  signal?: AbortSignal;
  /** Overrides the client's retry policy for this call; `false` makes one attempt only. */
  retry?: Partial<RetryPolicy> | false;
}

/** The call's deadline in epoch milliseconds, or null for none. */
export function resolveDeadline(opts: CallOptions, defaultTimeoutMs: number | null, now = Date.now()): number | null {
  const timeout = opts.timeoutMs === undefined ? defaultTimeoutMs : opts.timeoutMs;
  let deadline = timeout === null ? null : now + Math.max(0, timeout);
  if (opts.deadline !== undefined) {
    const abs = opts.deadline instanceof Date ? opts.deadline.getTime() : opts.deadline;
    deadline = deadline === null ? abs : Math.min(deadline, abs);
  }
  return deadline;
}

/** What one attempt gets: the overall deadline and the caller's signal. */
export interface Attempt {
  readonly deadlineMs: number | null;
  readonly signal: AbortSignal | undefined;
}

export const deadlineExceeded = (what: string): ClientError =>
  new ClientError(Status.DEADLINE_EXCEEDED, `${what}: deadline exceeded`);

export const cancelled = (what: string, reason?: unknown): ClientError =>
  new ClientError(Status.CANCELLED, `${what}: cancelled by the caller`, { cause: reason });
