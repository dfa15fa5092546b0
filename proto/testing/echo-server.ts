// A minimal GRPCInferenceService used by the tests and by tritonclient_wire_check.py:
// ServerLive, ServerReady, ServerMetadata, ModelReady, ModelInfer/ModelStreamInfer echo (every
// input comes back as an output of the same name, datatype, shape and raw bytes) and health Check.
// Run directly (`node proto/dist/testing/echo-server.js`) it listens on 127.0.0.1:0 and prints the port.
import { Server, ServerCredentials, status, type ServiceError } from '@grpc/grpc-js';
import { fileURLToPath } from 'node:url';
import {
  GRPCInferenceService,
  HealthCheckResponse_ServingStatus,
  HealthService,
  type GRPCInferenceServiceServer,
  type HealthServer,
  ModelInferResponse,
  type ModelInferRequest,
  stringParam,
} from '../src/index.js';

/** What the echo handler saw, for assertions about zero-copy decoding. */
export interface Observed {
  lastRequest?: ModelInferRequest;
}

function echo(req: ModelInferRequest): ModelInferResponse {
  if (req.modelName !== 'echo') {
    const err: Partial<ServiceError> = {
      code: status.NOT_FOUND,
      details: `Request for unknown model: '${req.modelName}' is not found`,
    };
    throw err;
  }
  return ModelInferResponse.fromPartial({
    modelName: req.modelName,
    modelVersion: req.modelVersion || '1',
    id: req.id,
    parameters: new Map([['echoed_inputs', stringParam(req.inputs.map((i) => i.name).join(','))]]),
    outputs: req.inputs.map((i) => ({ name: i.name, datatype: i.datatype, shape: i.shape })),
    rawOutputContents: req.rawInputContents,
  });
}

function unimplemented(name: string) {
  return (_call: unknown, callback: (e: Partial<ServiceError>) => void) =>
    callback({ code: status.UNIMPLEMENTED, details: `${name} is not implemented by the echo server` });
}

export function echoImplementation(observed: Observed = {}): GRPCInferenceServiceServer {
  return {
    serverLive: (_call, cb) => cb(null, { live: true }),
    serverReady: (_call, cb) => cb(null, { ready: true }),
    modelReady: (call, cb) => cb(null, { ready: call.request.name === 'echo' }),
    serverMetadata: (_call, cb) => cb(null, { name: 'hloserve-echo', version: '0.1.0', extensions: [] }),
    modelMetadata: unimplemented('ModelMetadata'),
    modelInfer: (call, cb) => {
      observed.lastRequest = call.request;
      try {
        cb(null, echo(call.request));
      } catch (e) {
        cb(e as Partial<ServiceError>);
      }
    },
    modelStreamInfer: (call) => {
      call.on('data', (req: ModelInferRequest) => {
        try {
          call.write({ errorMessage: '', inferResponse: echo(req) });
        } catch (e) {
          // per-request errors travel in-band; the stream stays open
          call.write({ errorMessage: (e as ServiceError).details, inferResponse: undefined });
        }
      });
      call.on('end', () => call.end());
    },
    modelConfig: unimplemented('ModelConfig'),
    modelStatistics: unimplemented('ModelStatistics'),
    repositoryIndex: unimplemented('RepositoryIndex'),
    repositoryModelLoad: unimplemented('RepositoryModelLoad'),
    repositoryModelUnload: unimplemented('RepositoryModelUnload'),
    systemSharedMemoryStatus: unimplemented('SystemSharedMemoryStatus'),
    systemSharedMemoryRegister: unimplemented('SystemSharedMemoryRegister'),
    systemSharedMemoryUnregister: (_call, cb) => cb(null, {}),
    cudaSharedMemoryStatus: unimplemented('CudaSharedMemoryStatus'),
    cudaSharedMemoryRegister: unimplemented('CudaSharedMemoryRegister'),
    cudaSharedMemoryUnregister: (_call, cb) => cb(null, {}),
    traceSetting: unimplemented('TraceSetting'),
    logSettings: unimplemented('LogSettings'),
  };
}

const health: HealthServer = {
  check: (_call, cb) => cb(null, { status: HealthCheckResponse_ServingStatus.SERVING }),
  watch: (call) => {
    call.write({ status: HealthCheckResponse_ServingStatus.SERVING });
  },
};

export async function startEchoServer(observed: Observed = {}, port = 0): Promise<{ server: Server; port: number }> {
  const server = new Server({
    'grpc.max_receive_message_length': -1,
    'grpc.max_send_message_length': -1,
  });
  server.addService(GRPCInferenceService, echoImplementation(observed));
  server.addService(HealthService, health);
  const bound = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`127.0.0.1:${port}`, ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  return { server, port: bound };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { server, port } = await startEchoServer({}, Number(process.argv[2] ?? 0));
  console.log(`PORT ${port}`);
  const stop = () => server.tryShutdown(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
