/**
 * The worker's KServe gRPC port: GRPCInferenceService, the health service and (through
 * `register`) the ControlService, served on the HTTP/2 frame layer (@hloserve/common/h2).
 * ModelInfer takes and returns raw bytes: its request decodes here, its answer is encoded once.
 */
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
import { ServeError, toGrpcStatus } from '@hloserve/common/errors';
import { type FrameServerHandle, listenGrpcFrames } from '@hloserve/common/h2/frame-server';
import {
  type CallContext,
  GrpcServices,
  malformed,
  type MalformedMessage,
  type MessageStream,
  type ServiceDefinition,
  type ServiceImplementation,
  wellFormed,
} from '@hloserve/common/h2/grpc-services';
import { fromGrpcRequest, toGrpcResponse } from './grpc-infer-adapter.js';
import { requestDeadline } from './deadline.js';
import { systemClock } from '../scheduler/clock.js';
import type { InferenceService, ModelStatisticsJson } from './service.js';
import { httpsOptions, type TlsMaterial } from '../tls/tls-material.js';

function unimplemented(what: string) {
  return (): never => {
    throw new ServeError('HLO_ERR_UNSUPPORTED', `${what} is not supported by hloserve`);
  };
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

/** The client's deadline on the scheduler's monotone clock, or null. */
function callDeadline(call: CallContext): number | null {
  const ms = call.deadlineMs;
  return ms === null ? null : systemClock.now() + (ms - Date.now());
}

export function buildInferenceImplementation(service: InferenceService): ServiceImplementation {
  const shm = () => {
    if (!service.sharedMemory)
      throw new ServeError('HLO_ERR_UNSUPPORTED', 'system shared memory is disabled on this server');
    return service.sharedMemory;
  };

  // ModelInfer takes and returns raw bytes (see startGrpcServer): a body that is not a
  // ModelInferRequest is the client's fault, INVALID_ARGUMENT.
  const modelInfer = async (bytes: Buffer, call: CallContext): Promise<Buffer> => {
    let req: ModelInferRequest;
    try {
      req = ModelInferRequest.decode(bytes);
    } catch (err) {
      throw malformed('ModelInferRequest', err);
    }
    const cancellation = new Cancellation();
    call.onCancel(() => cancellation.cancel());
    const wire = fromGrpcRequest(req);
    const deadline = requestDeadline(callDeadline(call), wire.parameters);
    const res = await service.infer(wire, { deadline, signal: cancellation });
    return encodeModelInferResponse(toGrpcResponse(res));
  };

  // Requests arrive as they complete; each answer (or its error, as error_message) is written
  // when it is ready; the call ends OK once the client has sent its last and every answer is out.
  const modelStreamInfer = (stream: MessageStream<ModelInferRequest>) => {
    const cancellation = new Cancellation();
    stream.onCancel(() => cancellation.cancel());
    let pending = 0;
    let ended = false;
    const maybeEnd = () => {
      if (ended && pending === 0) stream.end();
    };
    stream.onMessage = (req: ModelInferRequest | MalformedMessage) => {
      pending++;
      Promise.resolve()
        .then(() => {
          const wire = fromGrpcRequest(wellFormed(req));
          return service.infer(wire, {
            deadline: requestDeadline(callDeadline(stream), wire.parameters),
            signal: cancellation,
          });
        })
        .then(
          (res) => stream.write({ errorMessage: '', inferResponse: toGrpcResponse(res) }),
          (err: unknown) => stream.write({ errorMessage: toGrpcStatus(err).details, inferResponse: undefined }),
        )
        .finally(() => {
          pending--;
          maybeEnd();
        });
    };
    stream.onEnd = () => {
      ended = true;
      maybeEnd();
    };
  };

  return {
    serverLive: () => ({ live: service.serverLive() }),
    serverReady: () => ({ ready: service.serverReady() }),
    modelReady: (r: { name: string; version: string }) => ({ ready: service.modelReady(r.name, r.version) }),
    serverMetadata: () => {
      const m = service.serverMetadata();
      return { name: m.name, version: m.version, extensions: [...m.extensions] };
    },
    modelMetadata: (r: { name: string; version: string }) => {
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
    },
    modelConfig: (r: { name: string; version: string }) => {
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
    },
    modelStatistics: (r: { name: string; version: string }) => ({
      modelStats: service.modelStatistics(r.name, r.version).map(statsToProto),
    }),
    repositoryIndex: (r: { repositoryName: string; ready: boolean }) => ({
      models: service.repositoryIndex(r.ready),
    }),
    repositoryModelLoad: async (r: { repositoryName: string; modelName: string }, call: CallContext) => {
      const ac = new AbortController();
      call.onCancel(() => ac.abort());
      await service.loadModel(r.modelName, ac.signal);
      return {};
    },
    repositoryModelUnload: async (r: { modelName: string }) => {
      await service.unloadModel(r.modelName);
      return {};
    },
    systemSharedMemoryStatus: (r: { name: string }) => ({
      regions: new Map(
        shm()
          .status(r.name)
          .map((x) => [x.name, { name: x.name, key: x.key, offset: x.offset, byteSize: x.byteSize }]),
      ),
    }),
    systemSharedMemoryRegister: (r: { name: string; key: string; offset: string; byteSize: string }) => {
      // uint64 decimal strings (lossless); beyond 2^53 they become unsafe numbers the registry refuses.
      shm().register(r.name, r.key, Number(r.offset), Number(r.byteSize));
      return {};
    },
    systemSharedMemoryUnregister: (r: { name: string }) => {
      shm().unregister(r.name);
      return {};
    },
    // A CPU-only server owns no CUDA regions; perf_analyzer unregisters them at start regardless.
    cudaSharedMemoryStatus: () => ({ regions: new Map() }),
    cudaSharedMemoryUnregister: () => ({}),
    cudaSharedMemoryRegister: unimplemented('CUDA shared memory'),
    traceSetting: unimplemented('TraceSetting'),
    logSettings: unimplemented('LogSettings'),
    modelInfer,
    modelStreamInfer,
  };
}

export type GrpcServerHandle = FrameServerHandle;

export async function startGrpcServer(
  service: InferenceService,
  host: string,
  port: number,
  /** More services on the same port (the ControlService). */
  register?: (services: GrpcServices) => void,
  /** TLS for the port; absent: plaintext. */
  tls?: TlsMaterial | null,
): Promise<GrpcServerHandle> {
  const services = new GrpcServices();
  services.addService(
    {
      ...(GRPCInferenceService as unknown as ServiceDefinition),
      modelInfer: {
        ...GRPCInferenceService.modelInfer,
        requestDeserialize: (b: Buffer) => b,
        responseSerialize: (b: Buffer) => b,
      },
    },
    buildInferenceImplementation(service),
  );
  // Watch is left out: it answers UNIMPLEMENTED.
  services.addService(HealthService as unknown as ServiceDefinition, {
    check: () => ({
      status: service.serverReady()
        ? HealthCheckResponse_ServingStatus.SERVING
        : HealthCheckResponse_ServingStatus.NOT_SERVING,
    }),
  });
  register?.(services);
  return listenGrpcFrames(services.methods, host, port, {
    maxRecvBytes: service.limits.maxRecvBytes,
    maxSendBytes: service.limits.maxSendBytes,
    tls: tls ? httpsOptions(tls) : null,
    deadlineTimers: true,
    name: 'hloserve',
  });
}
