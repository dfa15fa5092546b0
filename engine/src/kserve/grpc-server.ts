import {
  type sendUnaryData,
  Server,
  ServerCredentials,
  type ServerDuplexStream,
  type ServerUnaryCall,
  status as Status,
  type UntypedServiceImplementation,
} from '@grpc/grpc-js';
import {
  DataType,
  encodeModelInferResponse,
  GRPCInferenceService,
  HealthCheckResponse_ServingStatus,
  HealthService,
  ModelConfig,
  ModelInferRequest,
  ModelStatistics,
} from '@hloserve/proto';
import { Cancellation } from '@hloserve/common/cancellation';
import { type GrpcServerHandle, listenGrpc } from '@hloserve/common/grpc-listen';
import { ServeError, toGrpcStatus } from '@hloserve/common/errors';
import { malformed, type MalformedMessage, tolerant, unary, wellFormed } from './grpc-tolerant.js';
import { fromGrpcRequest, toGrpcResponse } from './grpc-infer-adapter.js';
import { requestDeadline } from './deadline.js';
import { installGrpcTimeoutClamp } from './grpc-timeout.js';
import { systemClock } from '../scheduler/clock.js';
import type { InferenceService, ModelStatisticsJson } from './service.js';
import type { TlsMaterial } from '../tls/tls-material.js';

type Callback<T> = sendUnaryData<T>;

function unimplemented(what: string) {
  return (_call: unknown, cb: Callback<never>) =>
    cb({ code: Status.UNIMPLEMENTED, details: `${what} is not supported by hloserve` });
}

const d = (x: { count: number; ns: number }) => ({ count: x.count, ns: x.ns });
function statsToProto(s: ModelStatisticsJson): ModelStatistics {
  return ModelStatistics.fromPartial({
    name: s.name,
    version: s.version,
    lastInference: s.last_inference,
    inferenceCount: s.inference_count,
    executionCount: s.execution_count,
    inferenceStats: {
      success: d(s.inference_stats.success),
      fail: d(s.inference_stats.fail),
      queue: d(s.inference_stats.queue),
      computeInput: d(s.inference_stats.compute_input),
      computeInfer: d(s.inference_stats.compute_infer),
      computeOutput: d(s.inference_stats.compute_output),
    },
    batchStats: s.batch_stats.map((b) => ({
      batchSize: b.batch_size,
      computeInput: d(b.compute_input),
      computeInfer: d(b.compute_infer),
      computeOutput: d(b.compute_output),
    })),
    memoryUsage: s.memory_usage.map((m) => ({ type: m.type, id: m.id, byteSize: m.byte_size })),
  });
}

/** The grpc-timeout deadline of a call in epoch ms, or null. */
function callDeadline(call: { getDeadline(): Date | number }): number | null {
  const dl = call.getDeadline();
  const ms = dl instanceof Date ? dl.getTime() : dl;
  // grpc-js reports wall-clock time; move it onto the scheduler's monotone clock.
  return Number.isFinite(ms) ? systemClock.now() + (ms - Date.now()) : null;
}

export function buildInferenceImplementation(service: InferenceService): UntypedServiceImplementation {
  const shm = () => {
    if (!service.sharedMemory)
      throw new ServeError('HLO_ERR_UNSUPPORTED', 'system shared memory is disabled on this server');
    return service.sharedMemory;
  };

  // ModelInfer takes and returns raw bytes (see buildGrpcServer): a body that is not a
  // ModelInferRequest is the client's fault, INVALID_ARGUMENT, not grpc-js's INTERNAL.
  const modelInfer = (call: ServerUnaryCall<Buffer, Buffer>, cb: Callback<Buffer>) => {
    const cancellation = new Cancellation();
    // grpc-js emits 'cancelled' for every call when its stream closes, answered or not; only a
    // cancel before the answer concerns the request.
    const onCancel = () => cancellation.cancel();
    call.once('cancelled', onCancel);
    const answer = (err: ReturnType<typeof toGrpcStatus> | null, buf?: Buffer) => {
      call.off('cancelled', onCancel);
      if (err !== null) cb(err);
      else cb(null, buf);
    };
    Promise.resolve()
      .then(async () => {
        let req: ModelInferRequest;
        try {
          req = ModelInferRequest.decode(call.request);
        } catch (err) {
          throw malformed('ModelInferRequest', err);
        }
        const wire = fromGrpcRequest(req);
        const deadline = requestDeadline(callDeadline(call), wire.parameters);
        const res = await service.infer(wire, { deadline, signal: cancellation });
        return encodeModelInferResponse(toGrpcResponse(res));
      })
      .then(
        (buf) => answer(null, buf),
        (err: unknown) => answer(toGrpcStatus(err)),
      );
  };

  const modelStreamInfer = (call: ServerDuplexStream<ModelInferRequest | MalformedMessage, unknown>) => {
    const cancellation = new Cancellation();
    call.once('cancelled', () => cancellation.cancel());
    let pending = 0;
    let ended = false;
    const maybeEnd = () => {
      if (ended && pending === 0) call.end();
    };
    call.on('data', (req: ModelInferRequest | MalformedMessage) => {
      pending++;
      Promise.resolve()
        .then(() => {
          const wire = fromGrpcRequest(wellFormed(req));
          return service.infer(wire, {
            deadline: requestDeadline(callDeadline(call), wire.parameters),
            signal: cancellation,
          });
        })
        .then(
          (res) => call.write({ errorMessage: '', inferResponse: toGrpcResponse(res) }),
          (err: unknown) => call.write({ errorMessage: toGrpcStatus(err).details, inferResponse: undefined }),
        )
        .finally(() => {
          pending--;
          maybeEnd();
        });
    });
    call.on('end', () => {
      ended = true;
      maybeEnd();
    });
  };

  return {
    serverLive: unary(() => ({ live: service.serverLive() })),
    serverReady: unary(() => ({ ready: service.serverReady() })),
    modelReady: unary((r: { name: string; version: string }) => ({ ready: service.modelReady(r.name, r.version) })),
    serverMetadata: unary(() => {
      const m = service.serverMetadata();
      return { name: m.name, version: m.version, extensions: [...m.extensions] };
    }),
    modelMetadata: unary((r: { name: string; version: string }) => {
      const m = service.modelMetadata(r.name, r.version);
      const t = (x: { name: string; datatype: string; shape: readonly number[] }) => ({
        name: x.name,
        datatype: x.datatype,
        shape: [...x.shape],
      });
      return {
        name: m.name,
        versions: [...m.versions],
        platform: m.platform,
        inputs: m.inputs.map(t),
        outputs: m.outputs.map(t),
      };
    }),
    modelConfig: unary((r: { name: string; version: string }) => {
      const c = service.modelConfig(r.name, r.version);
      const dt = (n: string) => DataType[n as keyof typeof DataType] ?? DataType.TYPE_INVALID;
      return {
        config: ModelConfig.fromPartial({
          name: c.name,
          platform: c.platform,
          backend: c.backend,
          maxBatchSize: c.max_batch_size,
          input: c.input.map((i) => ({ name: i.name, dataType: dt(i.data_type), dims: [...i.dims] })),
          output: c.output.map((o) => ({ name: o.name, dataType: dt(o.data_type), dims: [...o.dims] })),
          ...(c.dynamic_batching
            ? {
                schedulingChoice: {
                  $case: 'dynamicBatching',
                  value: {
                    preferredBatchSize: [...c.dynamic_batching.preferred_batch_size],
                    maxQueueDelayMicroseconds: c.dynamic_batching.max_queue_delay_microseconds,
                  },
                },
              }
            : {}),
          parameters: new Map(Object.entries(c.parameters ?? {}).map(([k, v]) => [k, { stringValue: v.string_value }])),
        }),
      };
    }),
    modelStatistics: unary((r: { name: string; version: string }) => ({
      modelStats: service.modelStatistics(r.name, r.version).map(statsToProto),
    })),
    repositoryIndex: unary((r: { repositoryName: string; ready: boolean }) => ({
      models: service.repositoryIndex(r.ready),
    })),
    repositoryModelLoad: unary(async (r: { repositoryName: string; modelName: string }, call) => {
      const ac = new AbortController();
      call.once('cancelled', () => ac.abort());
      await service.loadModel(r.modelName, ac.signal);
      return {};
    }),
    repositoryModelUnload: unary(async (r: { modelName: string }) => {
      await service.unloadModel(r.modelName);
      return {};
    }),
    systemSharedMemoryStatus: unary((r: { name: string }) => ({
      regions: new Map(
        shm()
          .status(r.name)
          .map((x) => [x.name, { name: x.name, key: x.key, offset: x.offset, byteSize: x.byteSize }]),
      ),
    })),
    systemSharedMemoryRegister: unary((r: { name: string; key: string; offset: string; byteSize: string }) => {
      // uint64 decimal strings (lossless); beyond 2^53 they become unsafe numbers the registry refuses.
      shm().register(r.name, r.key, Number(r.offset), Number(r.byteSize));
      return {};
    }),
    systemSharedMemoryUnregister: unary((r: { name: string }) => {
      shm().unregister(r.name);
      return {};
    }),
    // A CPU-only server owns no CUDA regions; perf_analyzer unregisters them at start regardless.
    cudaSharedMemoryStatus: unary(() => ({ regions: new Map() })),
    cudaSharedMemoryUnregister: unary(() => ({})),
    cudaSharedMemoryRegister: unimplemented('CUDA shared memory'),
    traceSetting: unimplemented('TraceSetting'),
    logSettings: unimplemented('LogSettings'),
    modelInfer,
    modelStreamInfer,
  };
}

export type { GrpcServerHandle } from '@hloserve/common/grpc-listen';

export async function startGrpcServer(
  service: InferenceService,
  host: string,
  port: number,
  /** More services on the same port (the ControlService), added before it binds. */
  register?: (server: Server) => void,
  /** TLS for the port; absent: plaintext. */
  tls?: TlsMaterial | null,
): Promise<GrpcServerHandle> {
  installGrpcTimeoutClamp();
  const server = new Server({
    'grpc.max_receive_message_length': service.limits.maxRecvBytes,
    'grpc.max_send_message_length': service.limits.maxSendBytes,
    // grpc-js's channelz bookkeeping (call counters, timestamps, per-stream trackers) runs on every
    // call, and nothing here reads it: hloserve's own metrics and statistics count requests.
    'grpc.enable_channelz': 0,
  });
  const definition = {
    ...tolerant(GRPCInferenceService),
    modelInfer: {
      ...GRPCInferenceService.modelInfer,
      requestDeserialize: (b: Buffer) => b,
      responseSerialize: (b: Buffer) => b,
    },
  };
  server.addService(definition as unknown as typeof GRPCInferenceService, buildInferenceImplementation(service));
  server.addService(tolerant(HealthService), {
    check: unary(() => ({
      status: service.serverReady()
        ? HealthCheckResponse_ServingStatus.SERVING
        : HealthCheckResponse_ServingStatus.NOT_SERVING,
    })),
    watch: (call: { emit(e: string, err: unknown): void }) =>
      call.emit('error', { code: Status.UNIMPLEMENTED, details: 'Watch is not supported' }),
  });
  register?.(server);
  return listenGrpc(server, host, port, tls ? grpcCredentials(tls) : undefined);
}

/** The certificate and key as grpc-js server credentials; a client CA turns on client checks. */
export function grpcCredentials(tls: TlsMaterial): ServerCredentials {
  return ServerCredentials.createSsl(
    tls.clientCa,
    [{ private_key: tls.key, cert_chain: tls.cert }],
    tls.clientCa !== null,
  );
}
