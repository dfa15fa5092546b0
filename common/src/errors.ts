/**
 * The one error catalogue of engine and gateway. Every failure a client can see is a ServeError
 * carrying one of these codes; transports map it to the wire in one place (toGrpcStatus /
 * toHttpStatus). Codes are stable: never reuse a retired one.
 */
import { GrpcStatus } from './grpc-status.js';

export interface ErrorSpec {
  readonly grpc: GrpcStatus;
  readonly http: number;
  readonly description: string;
}

export const ERROR_CATALOGUE = {
  HLO_ERR_MODEL_NOT_FOUND: { grpc: GrpcStatus.NOT_FOUND, http: 404, description: 'unknown or unloaded model' },
  HLO_ERR_MODEL_NOT_READY: { grpc: GrpcStatus.UNAVAILABLE, http: 503, description: 'model known but not ready' },
  HLO_ERR_INVALID_ARGUMENT: { grpc: GrpcStatus.INVALID_ARGUMENT, http: 400, description: 'malformed request' },
  HLO_ERR_QUEUE_FULL: { grpc: GrpcStatus.RESOURCE_EXHAUSTED, http: 429, description: 'model queue at capacity' },
  HLO_ERR_OVERLOADED: { grpc: GrpcStatus.RESOURCE_EXHAUSTED, http: 429, description: 'in-flight request cap reached' },
  HLO_ERR_MESSAGE_TOO_LARGE: {
    grpc: GrpcStatus.RESOURCE_EXHAUSTED,
    http: 413,
    description: 'request or response larger than the configured limit',
  },
  HLO_ERR_DEADLINE_EXCEEDED: {
    grpc: GrpcStatus.DEADLINE_EXCEEDED,
    http: 504,
    description: 'deadline passed before the work could finish',
  },
  HLO_ERR_CANCELLED: { grpc: GrpcStatus.CANCELLED, http: 499, description: 'the client cancelled the request' },
  HLO_ERR_SHM_REGION_UNKNOWN: {
    grpc: GrpcStatus.FAILED_PRECONDITION,
    http: 400,
    description: 'shared-memory region not registered',
  },
  HLO_ERR_SHM_REGION_NOT_FOUND: {
    grpc: GrpcStatus.NOT_FOUND,
    http: 404,
    description: 'status asked for a shared-memory region that is not registered',
  },
  HLO_ERR_SHM_INVALID: {
    grpc: GrpcStatus.INVALID_ARGUMENT,
    http: 400,
    description: 'shared-memory registration or access out of bounds',
  },
  HLO_ERR_UNSUPPORTED: { grpc: GrpcStatus.UNIMPLEMENTED, http: 501, description: 'feature not supported' },
  HLO_ERR_FAILED_PRECONDITION: {
    grpc: GrpcStatus.FAILED_PRECONDITION,
    http: 409,
    description: 'operation not allowed in the current state',
  },
  HLO_ERR_SHUTTING_DOWN: { grpc: GrpcStatus.UNAVAILABLE, http: 503, description: 'server is shutting down' },
  HLO_ERR_BUNDLE_INVALID: { grpc: GrpcStatus.INVALID_ARGUMENT, http: 400, description: 'bundle failed to load' },
  HLO_ERR_CONFIG_INVALID: { grpc: GrpcStatus.INVALID_ARGUMENT, http: 400, description: 'invalid configuration' },
  HLO_ERR_HOOK_FAILED: {
    grpc: GrpcStatus.INTERNAL,
    http: 500,
    description: 'a bundle hook threw, overran its time or memory, or returned the wrong tensors',
  },
  HLO_ERR_RUNTIME: { grpc: GrpcStatus.INTERNAL, http: 500, description: 'the device runtime failed' },
  HLO_ERR_INTERNAL: { grpc: GrpcStatus.INTERNAL, http: 500, description: 'internal error' },
  HLO_ERR_NOT_FOUND: {
    grpc: GrpcStatus.NOT_FOUND,
    http: 404,
    description: 'unknown resource other than a model (route, token, upload)',
  },
  HLO_ERR_UNAUTHENTICATED: {
    grpc: GrpcStatus.UNAUTHENTICATED,
    http: 401,
    description: 'no valid credentials (missing, unknown, expired or revoked token)',
  },
  HLO_ERR_PERMISSION_DENIED: {
    grpc: GrpcStatus.PERMISSION_DENIED,
    http: 403,
    description: "the token's scope does not allow this operation",
  },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

/** Whether `x` names a catalogue entry: a code that crossed a thread or came from a hook may not. */
export function isErrorCode(x: unknown): x is ErrorCode {
  return typeof x === 'string' && Object.prototype.hasOwnProperty.call(ERROR_CATALOGUE, x);
}

export class ServeError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ServeError';
    this.code = code;
  }
  get grpcStatus(): GrpcStatus {
    return ERROR_CATALOGUE[this.code].grpc;
  }
  get httpStatus(): number {
    return ERROR_CATALOGUE[this.code].http;
  }
}

export function isServeError(err: unknown): err is ServeError {
  return err instanceof ServeError;
}

/** Anything thrown on a request path becomes a ServeError; unknown failures are INTERNAL. */
export function toServeError(err: unknown): ServeError {
  if (err instanceof ServeError) return err;
  if (err instanceof Error && err.name === 'AbortError') {
    return new ServeError('HLO_ERR_CANCELLED', 'request cancelled', { cause: err });
  }
  if (err instanceof Error && err.name === 'PjrtError') {
    return new ServeError('HLO_ERR_RUNTIME', err.message, { cause: err });
  }
  const message = err instanceof Error ? err.message : String(err);
  return new ServeError('HLO_ERR_INTERNAL', message, { cause: err });
}

/**
 * The longest message a client is sent. grpc-message travels in a trailer, and clients refuse
 * metadata past 8-16 KiB with RESOURCE_EXHAUSTED, which would hide the status we meant; messages
 * quote client values through quote(), this is the backstop for any that does not.
 */
export const MAX_ERROR_MESSAGE_CHARS = 2048;

function capMessage(message: string): string {
  return message.length <= MAX_ERROR_MESSAGE_CHARS
    ? message
    : `${message.slice(0, MAX_ERROR_MESSAGE_CHARS)}... (${message.length} chars)`;
}

export function toGrpcStatus(err: unknown): { code: GrpcStatus; details: string } {
  const e = toServeError(err);
  return { code: e.grpcStatus, details: capMessage(e.message) };
}

export function toHttpStatus(err: unknown): { status: number; body: { error: string; code: ErrorCode } } {
  const e = toServeError(err);
  return { status: e.httpStatus, body: { error: capMessage(e.message), code: e.code } };
}

/** How many characters of a client value an error message repeats. */
export const QUOTE_CHARS = 64;

/**
 * A client value as an error message shows it: quoted and escaped, at most QUOTE_CHARS characters of it,
 * with the full length said when cut. Every message that echoes client input goes through here,
 * so a 1 MiB name costs the message 64 characters, not 1 MiB.
 */
export function quote(value: unknown, max = QUOTE_CHARS): string {
  let text: string;
  if (typeof value === 'string') text = value;
  else if (typeof value === 'bigint') return quote(value.toString(), max);
  else if (typeof value === 'number' || typeof value === 'boolean' || value === null || value === undefined)
    return String(value);
  else if (Array.isArray(value)) {
    const head = value.slice(0, 8).map((x) => quote(x, 24));
    return value.length <= 8 ? `[${head.join(',')}]` : `[${head.join(',')},... ${value.length} items]`;
  } else {
    try {
      text = JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)) ?? String(value);
    } catch {
      text = Object.prototype.toString.call(value);
    }
    return text.length <= max ? text : `${text.slice(0, max)}... (${text.length} chars)`;
  }
  const cut = text.length <= max ? text : text.slice(0, max);
  const shown = `'${singleQuoted(cut)}'`;
  return cut === text ? shown : `${shown}... (${text.length} chars)`;
}

/** Control characters escaped as JSON does, in the single quotes Triton's messages use. */
function singleQuoted(s: string): string {
  return JSON.stringify(s).slice(1, -1).replace(/\\"/g, '"').replace(/'/g, "\\'");
}

/** A shape as messages show it: at most 8 dims, then how many more. */
export function shapeText(shape: readonly (number | bigint)[]): string {
  const head = shape.slice(0, 8).map((d) => quote(d, 24));
  return shape.length <= 8 ? `[${head.join(',')}]` : `[${head.join(',')},... ${shape.length} dims]`;
}

export const invalidArgument = (message: string): ServeError => new ServeError('HLO_ERR_INVALID_ARGUMENT', message);
