/**
 * Retries as the reference client does: only RESOURCE_EXHAUSTED (a full queue, the in-flight cap)
 * and, unless turned off, UNAVAILABLE (a model loading, a server restarting) are retried; every
 * other status fails at once. Before retry k the client waits a uniformly random time in
 * [0, min(initial * multiplier^(k-1), max)) ("full jitter", so clients refused together do not
 * come back together), and it never starts a wait that would leave less than `minBudgetMs` of the
 * overall deadline for the next attempt.
 */
import { setClampedTimeout } from '@hloserve/common/timers';
import { ClientError, Status } from './client-error.js';
import { cancelled, type Attempt } from './deadline.js';

export interface RetryPolicy {
  /** First backoff ceiling in milliseconds (reference: 1 s). */
  readonly initialBackoffMs: number;
  /** Growth of the ceiling per retry (reference: 2). */
  readonly multiplier: number;
  /** Largest backoff ceiling in milliseconds. */
  readonly maxBackoffMs: number;
  /** A retry needs at least this much of the deadline left after its wait (reference: 50 ms). */
  readonly minBudgetMs: number;
  /** Retry UNAVAILABLE as well as RESOURCE_EXHAUSTED (reference: true). */
  readonly retryUnavailable: boolean;
  /** Attempts in all, first included; bounds a call that has no deadline. */
  readonly maxAttempts: number;
}

export const DEFAULT_RETRY: RetryPolicy = {
  initialBackoffMs: 1000,
  multiplier: 2,
  maxBackoffMs: 8000,
  minBudgetMs: 50,
  retryUnavailable: true,
  maxAttempts: 10,
};

/** Whether an error may succeed if sent again unchanged. */
export function isRetryable(err: ClientError, policy: RetryPolicy): boolean {
  // An oversized message is RESOURCE_EXHAUSTED too, but sending it again cannot help.
  if (err.catalogueCode === 'HLO_ERR_MESSAGE_TOO_LARGE' || /larger than max/i.test(err.message)) return false;
  if (err.code === Status.RESOURCE_EXHAUSTED) return true;
  return err.code === Status.UNAVAILABLE && policy.retryUnavailable;
}

/** Resolves after `ms`, or rejects with CANCELLED when the signal aborts first. */
export function sleep(ms: number, signal: AbortSignal | undefined, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(cancelled(what, signal.reason));
    const onAbort = () => {
      clearTimeout(timer);
      reject(cancelled(what, signal?.reason));
    };
    const timer = setClampedTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Runs `attempt` until it succeeds, fails with a status that is not retried, runs out of
 * attempts, or the next wait would not fit in the deadline. The error thrown is the last
 * attempt's, with the number of attempts made.
 */
export async function withRetry<T>(
  what: string,
  policy: RetryPolicy | null,
  call: Attempt,
  attempt: (call: Attempt) => Promise<T>,
  toError: (err: unknown) => ClientError,
  random: () => number = Math.random,
): Promise<T> {
  let ceiling = policy?.initialBackoffMs ?? 0;
  for (let n = 1; ; n++) {
    if (call.signal?.aborted) throw cancelled(what, call.signal.reason);
    try {
      return await attempt(call);
    } catch (raw) {
      const err = toError(raw);
      if (policy === null || n >= policy.maxAttempts || !isRetryable(err, policy)) throw err.withAttempts(n);
      const wait = random() * Math.min(ceiling, policy.maxBackoffMs);
      ceiling *= policy.multiplier;
      if (call.deadlineMs !== null && Date.now() + wait + policy.minBudgetMs >= call.deadlineMs) {
        throw err.withAttempts(n);
      }
      await sleep(wait, call.signal, what);
    }
  }
}
