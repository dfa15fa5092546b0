/**
 * What the scheduler reports as it works, for metrics, the console's live view and logs. Events
 * are synchronous callbacks: a listener must be cheap and must not throw (a throwing listener is
 * ignored so that observation can never break serving).
 */
import type { ErrorCode, ServeError } from '@hloserve/common/errors';

/** Why a request left without running (or without its result). */
export type DropReason =
  | 'invalid' // refused at submit: malformed or larger than any compiled size
  | 'queue-full' // refused at submit: max_queue_depth reached (RESOURCE_EXHAUSTED)
  | 'expired' // its deadline passed before it could run
  | 'shed' // edf: could not finish by its deadline given the cost estimate
  | 'cancelled' // the caller's AbortSignal fired
  | 'shutdown' // the scheduler stopped without draining
  | 'unloaded' // its model was removed while it waited
  | 'failed' // the weight acquire or the execution failed
  | 'timeout'; // the execution exceeded dispatch_timeout_seconds

export type SchedulerEvent =
  | {
      readonly type: 'dispatch';
      readonly model: string;
      readonly batchSize: number;
      readonly requests: number;
      readonly rows: number;
      /** Per coalesced request, seconds from submit to dispatch. */
      readonly queueWaitSeconds: readonly number[];
    }
  | {
      readonly type: 'dispatch-done';
      readonly model: string;
      readonly batchSize: number;
      readonly requests: number;
      readonly rows: number;
      /** Wall time of Executor.execute (weights acquire excluded). */
      readonly computeSeconds: number;
      readonly outcome: 'ok' | 'failed' | 'timed-out';
      readonly error?: ServeError;
    }
  | {
      readonly type: 'dispatch-timeout';
      readonly model: string;
      readonly batchSize: number;
      readonly requests: number;
      readonly timeoutSeconds: number;
    }
  | {
      readonly type: 'request-dropped';
      readonly model: string;
      readonly reason: DropReason;
      readonly code: ErrorCode;
    };

export type SchedulerEventListener = (event: SchedulerEvent) => void;

/** Minimal structured logger; pino, console or a test capture all fit behind it. */
export interface SchedulerLogger {
  warn(message: string, fields?: Record<string, unknown>): void;
}

export const consoleLogger: SchedulerLogger = {
  warn: (message, fields) => console.warn(fields === undefined ? message : `${message} ${JSON.stringify(fields)}`),
};
