/**
 * The gateway's KServe gRPC endpoint, on HTTP/2 frames (@hloserve/common/h2/frame-server): every method sees raw
 * message bytes. ModelInfer bodies go to the worker exactly as they came; the few methods the
 * gateway answers itself (liveness, readiness, the repository index over all workers, shared
 * memory fanned out to every worker) decode only their small messages.
 */
import { status as Status } from '@grpc/grpc-js';
import {
  GRPCInferenceService,
  HealthCheckResponse,
  HealthCheckResponse_ServingStatus,
  ModelReadyResponse,
  RepositoryIndexRequest,
  RepositoryIndexResponse,
  type RepositoryIndexResponse_ModelIndex,
  ServerLiveResponse,
  ServerReadyResponse,
  SystemSharedMemoryRegisterRequest,
  SystemSharedMemoryUnregisterRequest,
} from '@hloserve/proto';
import { INFER_SERVICE } from './fleet.js';
import type { Gateway } from './gateway.js';
import {
  type FrameServerHandle,
  listenGrpcFrames,
  type MethodHandler,
  type UnaryCall,
  type UnaryHandler,
} from '@hloserve/common/h2/frame-server';
import { peekInfer } from './routing/infer-peek.js';
import { streamInferHandler } from './stream-infer.js';
import { type GatewayTls, secureOptions } from './tls.js';
import type { RawAnswer } from './worker-client.js';

const okBody = (b: Uint8Array): RawAnswer => ({ ok: true, body: Buffer.from(b.buffer, b.byteOffset, b.byteLength) });
const refuse = (code: number, details: string): RawAnswer => ({ ok: false, code, details });

/** KServe's methods by name (camelCase, as the generated service names them) -> handler. */
type Implementation = Record<string, UnaryHandler>;

export function buildGatewayImplementation(gw: Gateway): Implementation {
  const path = (method: string) => `${INFER_SERVICE}/${method}`;
  const noneReady = () => refuse(Status.UNAVAILABLE, 'no worker behind the gateway is ready');
  /** Forwards a per-model request (its name is field 1) to a worker holding the model. */
  const perModel =
    (method: string): UnaryHandler =>
    (call) => {
      let name: string;
      try {
        name = peekInfer(call.request).modelName;
      } catch (err) {
        return refuse(Status.INVALID_ARGUMENT, `malformed ${method} request: ${(err as Error).message}`);
      }
      return gw.forward(
        name,
        1,
        (w, dl) => w.call(path(method), call.request, dl, call.metadata, undefined, true),
        call.deadlineMs,
      );
    };
  /** Forwards to any ready worker (server-wide questions every worker answers alike). */
  const anyWorker =
    (method: string): UnaryHandler =>
    (call) => {
      const w = gw.fleet.readyWorkers()[0];
      if (!w) return noneReady();
      return w.call(path(method), call.request, call.deadlineMs, call.metadata, undefined, true);
    };
  /** Sent to every ready worker; the first failure, else the first answer. */
  const everyWorker =
    (method: string): UnaryHandler =>
    async (call) => {
      const ws = gw.fleet.readyWorkers();
      if (ws.length === 0) return noneReady();
      const as = await Promise.all(
        ws.map((w) => w.call(path(method), call.request, call.deadlineMs, call.metadata, undefined, true)),
      );
      void gw.fleet.refresh(true);
      return as.find((a) => !a.ok) ?? as[0]!;
    };
  const modelNameOf = (call: UnaryCall): string => {
    try {
      return peekInfer(call.request).modelName;
    } catch {
      return ''; // answered by the worker or perModel
    }
  };

  return {
    serverLive: () => okBody(ServerLiveResponse.encode({ live: true }).finish()),
    serverReady: () => okBody(ServerReadyResponse.encode({ ready: gw.fleet.anyReady() }).finish()),
    modelReady: async (call) => {
      const name = modelNameOf(call);
      // A model no worker holds is simply not ready (as a worker answers), not an error.
      if (name !== '' && gw.fleet.holders(name).length === 0) {
        await gw.fleet.refresh();
        if (gw.fleet.holders(name).length === 0) return okBody(ModelReadyResponse.encode({ ready: false }).finish());
      }
      return perModel('ModelReady')(call);
    },
    serverMetadata: anyWorker('ServerMetadata'),
    modelMetadata: perModel('ModelMetadata'),
    modelConfig: perModel('ModelConfig'),
    modelStatistics: (call) =>
      modelNameOf(call) === '' ? anyWorker('ModelStatistics')(call) : perModel('ModelStatistics')(call),
    repositoryIndex: async (call) => {
      let ready = false;
      try {
        ready = RepositoryIndexRequest.decode(call.request).ready;
      } catch (err) {
        return refuse(Status.INVALID_ARGUMENT, (err as Error).message);
      }
      const body = Buffer.from(RepositoryIndexRequest.encode({ repositoryName: '', ready }).finish());
      const as = await Promise.all(
        gw.fleet
          .readyWorkers()
          .map((w) => w.call(path('RepositoryIndex'), body, call.deadlineMs, undefined, undefined, true)),
      );
      const byName = new Map<string, RepositoryIndexResponse_ModelIndex>();
      for (const a of as) {
        if (!a.ok) continue;
        for (const m of RepositoryIndexResponse.decode(a.body!).models) {
          const seen = byName.get(m.name);
          if (!seen || (seen.state !== 'READY' && m.state === 'READY')) byName.set(m.name, m);
        }
      }
      const models = [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      return okBody(RepositoryIndexResponse.encode({ models }).finish());
    },
    repositoryModelLoad: everyWorker('RepositoryModelLoad'),
    repositoryModelUnload: everyWorker('RepositoryModelUnload'),
    systemSharedMemoryStatus: anyWorker('SystemSharedMemoryStatus'),
    systemSharedMemoryRegister: (call) => {
      let name: string;
      try {
        name = SystemSharedMemoryRegisterRequest.decode(call.request).name;
      } catch (err) {
        return refuse(Status.INVALID_ARGUMENT, (err as Error).message);
      }
      return gw.registerSharedMemory(name, call.request, call.deadlineMs);
    },
    systemSharedMemoryUnregister: (call) => {
      let name: string;
      try {
        name = SystemSharedMemoryUnregisterRequest.decode(call.request).name;
      } catch (err) {
        return refuse(Status.INVALID_ARGUMENT, (err as Error).message);
      }
      return gw.unregisterSharedMemory(name, call.request, call.deadlineMs);
    },
    cudaSharedMemoryStatus: anyWorker('CudaSharedMemoryStatus'),
    cudaSharedMemoryRegister: anyWorker('CudaSharedMemoryRegister'),
    cudaSharedMemoryUnregister: anyWorker('CudaSharedMemoryUnregister'),
    traceSetting: anyWorker('TraceSetting'),
    logSettings: anyWorker('LogSettings'),
    // The hot path: the body's bytes go to the worker as they came (gateway.infer reads only the
    // model name and batch extent). ModelStreamInfer routes each of its messages the same way.
    modelInfer: (call) =>
      gw.infer({ body: call.request, deadlineMs: call.deadlineMs, metadata: call.metadata, onCancel: call.onCancel }),
  };
}

export type GatewayGrpcHandle = FrameServerHandle;

const HEALTH_CHECK = '/grpc.health.v1.Health/Check';

export async function startGatewayGrpc(
  gw: Gateway,
  host: string,
  port: number,
  tls: GatewayTls | null = null,
): Promise<GatewayGrpcHandle> {
  const methods = new Map<string, MethodHandler>();
  const impl = buildGatewayImplementation(gw);
  for (const [key, m] of Object.entries(GRPCInferenceService)) {
    const handler = impl[key];
    if (handler && !m.requestStream) methods.set(m.path, handler);
  }
  methods.set(GRPCInferenceService.modelStreamInfer.path, streamInferHandler(gw));
  methods.set(HEALTH_CHECK, () =>
    okBody(
      HealthCheckResponse.encode({
        status: gw.fleet.anyReady()
          ? HealthCheckResponse_ServingStatus.SERVING
          : HealthCheckResponse_ServingStatus.NOT_SERVING,
      }).finish(),
    ),
  );
  return listenGrpcFrames(methods, host, port, {
    maxRecvBytes: gw.opts.maxMessageBytes,
    tls: tls === null ? null : secureOptions(tls),
    name: 'the gateway',
  });
}
