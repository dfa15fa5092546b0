// grpc.health.v1: HealthService (server definition), HealthClient, HealthCheckResponse_ServingStatus.
export * from '../generated/grpc/health/v1/health.js';
