// @hloserve/proto: generated protobuf messages and grpc-js service definitions.
//
//   import { GRPCInferenceService, type GRPCInferenceServiceServer, ModelInferRequest } from '@hloserve/proto';
//   server.addService(GRPCInferenceService, impl);
//
// Subpath modules: '@hloserve/proto/inference', '@hloserve/proto/health', '@hloserve/proto/control'.
// See docs/proto.md for the TypeScript shapes (int64 -> number, map -> Map, oneof -> { $case, value }).
export * from './inference.js';
export * from './health.js';
export * from './control.js';
