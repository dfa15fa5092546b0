/**
 * What the gateway does with a worker's answer. A status the worker chose is the client's
 * answer, unchanged: turning INVALID_ARGUMENT or INTERNAL into UNAVAILABLE (as the reference
 * does) makes clients retry requests that will never succeed. A different replica is tried only
 * where the request cannot have run on this one: the connection was never made, the worker
 * rejected the call before admitting it (it is shutting down, or the model is not ready there),
 * or the worker does not hold the model.
 */
import { status as Status } from '@grpc/grpc-js';

/**
 * answered     the worker ran (or refused) the request: return its status as is
 * not_run      the request never reached a model on this worker: try the next replica
 * dropped      the connection broke after the request was sent: it may have run
 */
export type Outcome = 'answered' | 'not_run' | 'dropped';

export interface WorkerFailure {
  readonly code: number;
  readonly details: string;
}

/** grpc-js' own messages for a call that never got a connection. */
const NEVER_CONNECTED = /No connection established|ECONNREFUSED|connect E|Name resolution failed|getaddrinfo/i;
/** HTTP/2's guarantee that the worker did not process the stream (REFUSED_STREAM, or past GOAWAY's last id). */
const NOT_PROCESSED = /Stream refused|REFUSED_STREAM|not processed/i;
/** grpc-js' own messages for a stream that broke mid-call. */
const BROKE_MID_CALL = /Connection dropped|ECONNRESET|RST_STREAM|GOAWAY|socket hang up|EPIPE/i;
/** The worker's admission refusals (common/errors: model not ready, shutting down). */
const WORKER_REFUSED = /not ready|shutting down|is not loaded/i;

/** True when grpc-js never reached the worker (the worker is down, not busy). */
export function neverConnected(details: string): boolean {
  return NEVER_CONNECTED.test(details);
}

/** Classifies a failed worker call; every code but UNAVAILABLE and NOT_FOUND is the worker's answer. */
export function classifyFailure(f: WorkerFailure): Outcome {
  switch (f.code) {
    case Status.UNAVAILABLE:
      if (NEVER_CONNECTED.test(f.details) || NOT_PROCESSED.test(f.details)) return 'not_run';
      if (BROKE_MID_CALL.test(f.details)) return 'dropped';
      if (WORKER_REFUSED.test(f.details)) return 'not_run';
      // An UNAVAILABLE we cannot place: assume it ran, do not run it twice.
      return 'dropped';
    case Status.NOT_FOUND:
      // The routing table was stale: this worker does not hold the model.
      return 'not_run';
    case Status.CANCELLED:
      // The client cancelled (we forward cancellation); nothing to retry for.
      return 'answered';
    default:
      return 'answered';
  }
}

/**
 * Whether the next replica is tried: only where the request cannot have run. A call cut off
 * mid-way (the worker died holding it) is not re-sent: the gateway cannot know whether it ran,
 * and a model's hooks or a meta model may have effects beyond their answer. The client gets
 * UNAVAILABLE, which KServe clients (ours included) retry when the call is theirs to repeat.
 */
export function shouldRetry(outcome: Outcome): boolean {
  return outcome === 'not_run';
}

/** The client's status for a call cut off mid-way on `worker` (it may have run there). */
export function droppedStatus(worker: string, details: string): WorkerFailure {
  return {
    code: Status.UNAVAILABLE,
    details: `the connection to worker '${worker}' broke during the call (it may have run; not re-sent): ${details}`,
  };
}

/** The status the client sees when every replica refused (the last failure wins, as it is). */
export function finalStatus(last: WorkerFailure | null, model: string): WorkerFailure {
  if (last !== null) return last;
  return { code: Status.NOT_FOUND, details: `model '${model}' is not served by any worker behind the gateway` };
}
