/**
 * Every failure the client reports is a ClientError: the gRPC status (over HTTP, the status the
 * HTTP answer stands for), the HTTP status when the call went over HTTP, and the server's
 * catalogue code (HLO_ERR_...) when the server sent one.
 */
import { status as Status } from '@grpc/grpc-js';
import { ERROR_CATALOGUE, type ErrorCode } from '@hloserve/common/errors';

export { Status };

export class ClientError extends Error {
  /** gRPC status code (numeric, `Status.RESOURCE_EXHAUSTED` ...). */
  readonly code: Status;
  /** HTTP status of the answer, over HTTP only. */
  readonly httpStatus: number | undefined;
  /** The server's catalogue code where it sent one (HTTP error bodies carry it). */
  readonly catalogueCode: ErrorCode | undefined;
  /** How many attempts the call made before this error (retries included). */
  readonly attempts: number;

  constructor(
    code: Status,
    message: string,
    extra: { httpStatus?: number; catalogueCode?: ErrorCode; attempts?: number; cause?: unknown } = {},
  ) {
    super(message, extra.cause === undefined ? undefined : { cause: extra.cause });
    this.name = 'ClientError';
    this.code = code;
    this.httpStatus = extra.httpStatus;
    this.catalogueCode = extra.catalogueCode;
    this.attempts = extra.attempts ?? 1;
  }

  /** The status name, e.g. 'RESOURCE_EXHAUSTED'. */
  get codeName(): string {
    return Status[this.code] ?? String(this.code);
  }

  withAttempts(attempts: number): ClientError {
    if (attempts === this.attempts) return this;
    return new ClientError(this.code, this.message, {
      httpStatus: this.httpStatus,
      catalogueCode: this.catalogueCode,
      attempts,
      cause: this.cause,
    });
  }
}

export function isClientError(err: unknown): err is ClientError {
  return err instanceof ClientError;
}

function isCatalogueCode(s: unknown): s is ErrorCode {
  return typeof s === 'string' && Object.hasOwn(ERROR_CATALOGUE, s);
}

/** A grpc-js ServiceError (or anything thrown around a call) as a ClientError. */
export function fromGrpcError(err: unknown): ClientError {
  if (err instanceof ClientError) return err;
  const e = err as { code?: unknown; details?: unknown; message?: unknown; metadata?: { get(k: string): unknown[] } };
  const code = typeof e.code === 'number' && Status[e.code] !== undefined ? (e.code as Status) : Status.UNKNOWN;
  const details = typeof e.details === 'string' && e.details !== '' ? e.details : String(e.message ?? err);
  const fromMeta = e.metadata?.get('hloserve-error-code')?.[0];
  return new ClientError(code, details, {
    catalogueCode: isCatalogueCode(fromMeta) ? fromMeta : undefined,
    cause: err,
  });
}

/** The gRPC status an HTTP status stands for (the inverse of the catalogue's mapping). */
export function grpcCodeOfHttp(httpStatus: number): Status {
  switch (httpStatus) {
    case 400:
      return Status.INVALID_ARGUMENT;
    case 401:
      return Status.UNAUTHENTICATED;
    case 403:
      return Status.PERMISSION_DENIED;
    case 404:
      return Status.NOT_FOUND;
    case 409:
      return Status.FAILED_PRECONDITION;
    case 413:
    case 429:
      return Status.RESOURCE_EXHAUSTED;
    case 499:
      return Status.CANCELLED;
    case 501:
      return Status.UNIMPLEMENTED;
    case 502:
    case 503:
      return Status.UNAVAILABLE;
    case 504:
      return Status.DEADLINE_EXCEEDED;
    default:
      return httpStatus >= 500 ? Status.INTERNAL : Status.UNKNOWN;
  }
}

/** An HTTP error answer ({"error", "code"} body) as a ClientError. */
export function fromHttpError(httpStatus: number, bodyText: string): ClientError {
  let message = bodyText || `HTTP ${httpStatus}`;
  let catalogueCode: ErrorCode | undefined;
  try {
    const body = JSON.parse(bodyText) as { error?: unknown; code?: unknown };
    if (typeof body.error === 'string') message = body.error;
    if (isCatalogueCode(body.code)) catalogueCode = body.code;
  } catch {
    // Not JSON: a proxy's page or an empty body; the text itself is the message.
  }
  // The catalogue code pins the gRPC status exactly (400 alone could be INVALID_ARGUMENT or
  // FAILED_PRECONDITION).
  const code = catalogueCode !== undefined ? ERROR_CATALOGUE[catalogueCode].grpc : grpcCodeOfHttp(httpStatus);
  return new ClientError(code, message, { httpStatus, catalogueCode });
}
