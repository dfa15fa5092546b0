// A gRPC KServe V2 server that answers every ModelInfer at once with the same canned logits: the
// floor that the load generator and the transport alone cost (bench/peers/run.mjs).
// Usage: node bench/peers/canned.mjs PORT
import { Server, ServerCredentials } from '@grpc/grpc-js';
import { DataType, GRPCInferenceService, ModelConfig } from '@hloserve/proto/inference';

const port = Number(process.argv[2]);
const raw = Buffer.from(new Float32Array(10).buffer);
const response = {
  modelName: 'mlp',
  modelVersion: '1',
  id: '',
  parameters: new Map(),
  outputs: [{ name: 'logits', datatype: 'FP32', shape: [1, 10], parameters: new Map(), contents: undefined }],
  rawOutputContents: [raw],
};
// Triton's ModelConfig, which perf_analyzer reads first: what the peers report (model_config_rpc.py).
const config = ModelConfig.fromPartial({
  name: 'mlp',
  platform: 'canned',
  maxBatchSize: 32,
  input: [{ name: 'x', dataType: DataType.TYPE_FP32, dims: [784] }],
  output: [{ name: 'logits', dataType: DataType.TYPE_FP32, dims: [10] }],
});
const server = new Server();
server.addService(GRPCInferenceService, {
  modelInfer: (_call, cb) => cb(null, response),
  serverLive: (_call, cb) => cb(null, { live: true }),
  serverReady: (_call, cb) => cb(null, { ready: true }),
  modelReady: (_call, cb) => cb(null, { ready: true }),
  serverMetadata: (_call, cb) => cb(null, { name: 'canned', version: '1', extensions: [] }),
  modelConfig: (_call, cb) => cb(null, { config }),
  modelMetadata: (_call, cb) =>
    cb(null, {
      name: 'mlp',
      versions: ['1'],
      platform: 'canned',
      inputs: [{ name: 'x', datatype: 'FP32', shape: [-1, 784] }],
      outputs: [{ name: 'logits', datatype: 'FP32', shape: [-1, 10] }],
    }),
});
server.bindAsync(`127.0.0.1:${port}`, ServerCredentials.createInsecure(), (err) => {
  if (err) throw err;
  console.log(JSON.stringify({ msg: 'listening', grpc: port }));
});
