// A gRPC KServe V2 server that answers every ModelInfer at once with the same canned (zero)
// outputs of the model's batch-1 shapes: the floor that the load generator and the transport alone
// cost (bench/peers/run.mjs). The model's names and shapes come from its bundle (model-spec.mjs).
// Usage: node bench/peers/canned.mjs PORT [MODEL] [TRANSPORT]   (MODEL: a bundle under
// examples/models; mlp. TRANSPORT: grpc-js, the default, or frames: the same answers on the HTTP/2
// frame layer hloserve's own port uses, @hloserve/common/h2)
import { Server, ServerCredentials } from '@grpc/grpc-js';
import { listenGrpcFrames } from '@hloserve/common/h2/frame-server';
import { GrpcServices } from '@hloserve/common/h2/grpc-services';
import { GRPCInferenceService, ModelConfig } from '@hloserve/proto/inference';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { modelSpec } from './model-spec.mjs';

const port = Number(process.argv[2]);
const spec = await modelSpec(resolve(dirname(fileURLToPath(import.meta.url)), '..', '..'), process.argv[3] ?? 'mlp');
const one = (t) => [1, ...t.shape.slice(1)];
const bytesPer = { BOOL: 1, UINT8: 1, INT8: 1, UINT16: 2, INT16: 2, FP16: 2, BF16: 2, UINT32: 4, INT32: 4, FP32: 4 };
const response = {
  modelName: spec.name,
  modelVersion: '1',
  id: '',
  parameters: new Map(),
  outputs: spec.outputs.map((t) => ({
    name: t.name,
    datatype: t.datatype,
    shape: one(t),
    parameters: new Map(),
    contents: undefined,
  })),
  rawOutputContents: spec.outputs.map((t) =>
    Buffer.alloc(one(t).reduce((a, b) => a * b, 1) * (bytesPer[t.datatype] ?? 8)),
  ),
};
// Triton's ModelConfig, which perf_analyzer reads first: what the peers report (model_config_rpc.py).
const config = ModelConfig.fromPartial({
  name: spec.name,
  platform: 'canned',
  maxBatchSize: 32,
  input: spec.inputs.map((t) => ({ name: t.name, dataType: t.tritonType, dims: t.shape.slice(1) })),
  output: spec.outputs.map((t) => ({ name: t.name, dataType: t.tritonType, dims: t.shape.slice(1) })),
});
const metadata = (ts) => ts.map((t) => ({ name: t.name, datatype: t.datatype, shape: t.shape }));
const answers = {
  modelInfer: () => response,
  serverLive: () => ({ live: true }),
  serverReady: () => ({ ready: true }),
  modelReady: () => ({ ready: true }),
  serverMetadata: () => ({ name: 'canned', version: '1', extensions: [] }),
  modelConfig: () => ({ config }),
  modelMetadata: () => ({
    name: spec.name,
    versions: ['1'],
    platform: 'canned',
    inputs: metadata(spec.inputs),
    outputs: metadata(spec.outputs),
  }),
};
if ((process.argv[4] ?? 'grpc-js') === 'frames') {
  const services = new GrpcServices('canned');
  services.addService(GRPCInferenceService, answers);
  await listenGrpcFrames(services.methods, '127.0.0.1', port, { maxRecvBytes: 2 ** 31 - 1 });
  console.log(JSON.stringify({ msg: 'listening', grpc: port, transport: 'frames' }));
} else {
  const server = new Server();
  server.addService(
    GRPCInferenceService,
    Object.fromEntries(Object.entries(answers).map(([k, f]) => [k, (_call, cb) => cb(null, f())])),
  );
  server.bindAsync(`127.0.0.1:${port}`, ServerCredentials.createInsecure(), (err) => {
    if (err) throw err;
    console.log(JSON.stringify({ msg: 'listening', grpc: port }));
  });
}
