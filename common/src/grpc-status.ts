/**
 * gRPC's status codes, whose numbers the gRPC protocol fixes (grpc-js's `status` enum holds the
 * same; common/test/errors.test.ts pins that). They are written out here so the error catalogue
 * loads without grpc-js: every hook thread imports the catalogue, and loading grpc-js there cost
 * each thread about 0.1 s of CPU at a start, for a table of numbers (bench/RESULTS.md, session 12).
 */
import type { status } from '@grpc/grpc-js';

export type GrpcStatus = status;

export const GrpcStatus = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const satisfies Record<keyof typeof status, status>;
