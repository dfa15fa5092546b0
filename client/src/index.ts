// @hloserve/client: a TypeScript client for KServe V2 (gRPC and HTTP) with no native code.
//
//   const client = new InferenceClient({ url: '127.0.0.1:8001' });
//   const mlp = client.model('mlp');
//   const res = await mlp.infer({ x: tensor(new Float32Array(784), [1, 784]) }, { timeoutMs: 500 });
//   res.output('logits').data; // Float32Array
//
// See docs/clients.md.
export { InferenceClient, type InferenceClientOptions } from './client.js';
export {
  ModelHandle,
  type InferInput,
  type InferOptions,
  type InferResult,
  type RequestedOutput,
  type SharedMemoryInput,
  type SharedMemoryPlace,
} from './model.js';
export { ClientError, Status, isClientError } from './client-error.js';
export type { CallOptions } from './deadline.js';
export { DEFAULT_RETRY, type RetryPolicy } from './retry.js';
export { SystemSharedMemoryRegion, SHM_ROOT } from './shared-memory.js';
export { tensor, bytesTensor, type Tensor, type OutputTensor } from './tensor.js';
export { datatypeOf, type Datatype, type NumericArray } from './datatypes.js';
export type {
  ModelMetadata,
  TensorMetadata,
  ServerMetadata,
  RepositoryModel,
  RegionStatus,
  Transport,
} from './transport.js';
export type { ModelConfig } from '@hloserve/proto/inference';
