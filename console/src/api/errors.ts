/** A failed control API call: the HTTP status and the engine's error code (common/src/errors.ts). */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
  }
  get isAuth(): boolean {
    return this.status === 401 || this.status === 403;
  }
}

/** TanStack Query's retry predicate: auth failures are answers, not accidents, so never retried. */
export function shouldRetry(failureCount: number, error: unknown): boolean {
  if (error instanceof ApiError && (error.isAuth || error.status === 404 || error.status === 400)) return false;
  return failureCount < 3;
}

/** Reads the engine's error body, whichever of its forms it is: {error: "msg", code} or {error: {code, message}}. */
export function errorFromBody(status: number, body: unknown): ApiError {
  const b = (body ?? {}) as { error?: unknown; code?: unknown; message?: unknown };
  if (b.error && typeof b.error === 'object') {
    const e = b.error as { code?: unknown; message?: unknown };
    return new ApiError(status, String(e.code ?? 'HTTP_' + status), String(e.message ?? 'request failed'));
  }
  const message = typeof b.error === 'string' ? b.error : typeof b.message === 'string' ? b.message : '';
  return new ApiError(status, typeof b.code === 'string' ? b.code : 'HTTP_' + status, message || `HTTP ${status}`);
}
