/**
 * Deadlines through the gateway: the time left when the gateway calls a worker, to the
 * millisecond (grpc-js encodes grpc-timeout in milliseconds below 10^8 ms), never rounded up to
 * whole seconds as the reference does, so the worker gives up when the client does.
 */

export type Forwarded =
  { readonly kind: 'none' } | { readonly kind: 'expired' } | { readonly kind: 'ms'; readonly remainingMs: number };

/** `deadlineMs` is epoch ms (Infinity or null for none); the result is what the worker gets. */
export function forwardDeadline(deadlineMs: number | null, nowMs: number): Forwarded {
  if (deadlineMs === null || !Number.isFinite(deadlineMs)) return { kind: 'none' };
  const remaining = Math.floor(deadlineMs - nowMs);
  if (remaining <= 0) return { kind: 'expired' };
  return { kind: 'ms', remainingMs: remaining };
}

/** The grpc-timeout header value a worker receives for `remainingMs` (gRPC's wire format). */
export function grpcTimeoutHeader(remainingMs: number): string {
  const ms = Math.max(0, Math.ceil(remainingMs));
  if (ms < 1e8) return `${ms}m`;
  if (ms / 1000 < 1e8) return `${Math.ceil(ms / 1000)}S`;
  return `${Math.ceil(ms / 60_000)}M`;
}
