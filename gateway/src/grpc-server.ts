/**
 * The gateway's KServe gRPC endpoint. Every method is registered with raw-bytes
 * (de)serializers: ModelInfer bodies go to the worker exactly as they came; the few methods the
 * gateway answers itself (liveness, readiness, the repository index over all workers, shared
 * memory fanned out to every worker) decode only their small messages.
 */
import {
  type Metadata,
  Server,
  type ServerUnaryCall,
  type sendUnaryData,
  status as Status,
  type UntypedServiceImplementation,
} from '@grpc/grpc-js';
import {
  GRPCInferenceService,
  HealthCheckResponse,
  HealthCheckResponse_ServingStatus,
  HealthService,
  ModelReadyResponse,
  RepositoryIndexRequest,
  RepositoryIndexResponse,
  type RepositoryIndexResponse_ModelIndex,
  ServerLiveResponse,
  ServerReadyResponse,
  SystemSharedMemoryRegisterRequest,
  SystemSharedMemoryUnregisterRequest,
} from '@hloserve/proto';
import { type GrpcServerHandle, listenGrpc } from '@hloserve/common/grpc-listen';
import { INFER_SERVICE } from './fleet.js';
import type { Gateway } from './gateway.js';
import { peekInfer } from './routing/infer-peek.js';
import type { RawAnswer } from './worker-client.js';

type RawCall = ServerUnaryCall<Buffer, Buffer>;
type RawCb = sendUnaryData<Buffer>;

function callDeadlineMs(call: RawCall): number | null {
  const d = call.getDeadline();
  const ms = d instanceof Date ? d.getTime() : d;
  return Number.isFinite(ms) ? ms : null;
}

/** Client metadata forwarded to workers (auth tokens, trace ids); transport headers are grpc-js' own. */
function forwardedMetadata(call: RawCall): Metadata {
  const md = call.metadata.clone();
  for (const k of ['user-agent', 'grpc-accept-encoding', 'accept-encoding', 'content-type', 'te']) md.remove(k);
  return md;
}

const answer = (cb: RawCb, a: RawAnswer) =>
  a.ok ? cb(null, a.body!) : cb({ code: a.code!, details: a.details ?? '' });
const okBody = (b: Uint8Array): RawAnswer => ({ ok: true, body: Buffer.from(b.buffer, b.byteOffset, b.byteLength) });

export function buildGatewayImplementation(gw: Gateway): UntypedServiceImplementation {
  const path = (method: string) => `${INFER_SERVICE}/${method}`;
  /** Forwards a per-model request (its name is field 1) to a worker holding the model. */
  const perModel = (method: string) => (call: RawCall, cb: RawCb) => {
    let name: string;
    try {
      name = peekInfer(call.request).modelName;
    } catch (err) {
      cb({ code: Status.INVALID_ARGUMENT, details: `malformed ${method} request: ${(err as Error).message}` });
      return;
    }
    void gw
      .forward(
        name,
        1,
        (w, dl) => w.call(path(method), call.request, dl, forwardedMetadata(call), undefined, true),
        callDeadlineMs(call),
      )
      .then((a) => answer(cb, a));
  };
  /** Forwards to any ready worker (server-wide questions every worker answers alike). */
  const anyWorker = (method: string) => (call: RawCall, cb: RawCb) => {
    const w = gw.fleet.readyWorkers()[0];
    if (!w) return cb({ code: Status.UNAVAILABLE, details: 'no worker behind the gateway is ready' });
    void w
      .call(path(method), call.request, callDeadlineMs(call), forwardedMetadata(call), undefined, true)
      .then((a) => answer(cb, a));
  };
  /** Sent to every ready worker; the first failure, else the first answer. */
  const everyWorker = (method: string) => (call: RawCall, cb: RawCb) => {
    const ws = gw.fleet.readyWorkers();
    if (ws.length === 0) return cb({ code: Status.UNAVAILABLE, details: 'no worker behind the gateway is ready' });
    void Promise.all(
      ws.map((w) => w.call(path(method), call.request, callDeadlineMs(call), forwardedMetadata(call), undefined, true)),
    ).then((as) => {
      answer(cb, as.find((a) => !a.ok) ?? as[0]!);
      void gw.fleet.refresh(true);
    });
  };

  return {
    serverLive: (_call: RawCall, cb: RawCb) => answer(cb, okBody(ServerLiveResponse.encode({ live: true }).finish())),
    serverReady: (_call: RawCall, cb: RawCb) =>
      answer(cb, okBody(ServerReadyResponse.encode({ ready: gw.fleet.anyReady() }).finish())),
    modelReady: (call: RawCall, cb: RawCb) => {
      let name = '';
      try {
        name = peekInfer(call.request).modelName;
      } catch {
        /* answered by perModel */
      }
      // A model no worker holds is simply not ready (as a worker answers), not an error.
      if (name !== '' && gw.fleet.holders(name).length === 0) {
        void gw.fleet
          .refresh()
          .then(() =>
            gw.fleet.holders(name).length === 0
              ? answer(cb, okBody(ModelReadyResponse.encode({ ready: false }).finish()))
              : perModel('ModelReady')(call, cb),
          );
        return;
      }
      perModel('ModelReady')(call, cb);
    },
    serverMetadata: anyWorker('ServerMetadata'),
    modelMetadata: perModel('ModelMetadata'),
    modelConfig: perModel('ModelConfig'),
    modelStatistics: (call: RawCall, cb: RawCb) => {
      let name = '';
      try {
        name = peekInfer(call.request).modelName;
      } catch {
        /* answered by the worker */
      }
      return name === '' ? anyWorker('ModelStatistics')(call, cb) : perModel('ModelStatistics')(call, cb);
    },
    repositoryIndex: (call: RawCall, cb: RawCb) => {
      let ready = false;
      try {
        ready = RepositoryIndexRequest.decode(call.request).ready;
      } catch (err) {
        return cb({ code: Status.INVALID_ARGUMENT, details: (err as Error).message });
      }
      const body = Buffer.from(RepositoryIndexRequest.encode({ repositoryName: '', ready }).finish());
      void Promise.all(
        gw.fleet
          .readyWorkers()
          .map((w) => w.call(path('RepositoryIndex'), body, callDeadlineMs(call), undefined, undefined, true)),
      ).then((as) => {
        const byName = new Map<string, RepositoryIndexResponse_ModelIndex>();
        for (const a of as) {
          if (!a.ok) continue;
          for (const m of RepositoryIndexResponse.decode(a.body!).models) {
            const seen = byName.get(m.name);
            if (!seen || (seen.state !== 'READY' && m.state === 'READY')) byName.set(m.name, m);
          }
        }
        const models = [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
        answer(cb, okBody(RepositoryIndexResponse.encode({ models }).finish()));
      });
    },
    repositoryModelLoad: everyWorker('RepositoryModelLoad'),
    repositoryModelUnload: everyWorker('RepositoryModelUnload'),
    systemSharedMemoryStatus: anyWorker('SystemSharedMemoryStatus'),
    systemSharedMemoryRegister: (call: RawCall, cb: RawCb) => {
      let name: string;
      try {
        name = SystemSharedMemoryRegisterRequest.decode(call.request).name;
      } catch (err) {
        return cb({ code: Status.INVALID_ARGUMENT, details: (err as Error).message });
      }
      void gw.registerSharedMemory(name, call.request, callDeadlineMs(call)).then((a) => answer(cb, a));
    },
    systemSharedMemoryUnregister: (call: RawCall, cb: RawCb) => {
      let name: string;
      try {
        name = SystemSharedMemoryUnregisterRequest.decode(call.request).name;
      } catch (err) {
        return cb({ code: Status.INVALID_ARGUMENT, details: (err as Error).message });
      }
      void gw.unregisterSharedMemory(name, call.request, callDeadlineMs(call)).then((a) => answer(cb, a));
    },
    cudaSharedMemoryStatus: anyWorker('CudaSharedMemoryStatus'),
    cudaSharedMemoryRegister: anyWorker('CudaSharedMemoryRegister'),
    cudaSharedMemoryUnregister: anyWorker('CudaSharedMemoryUnregister'),
    traceSetting: anyWorker('TraceSetting'),
    logSettings: anyWorker('LogSettings'),
    modelInfer: (call: RawCall, cb: RawCb) => {
      void gw
        .infer({
          body: call.request,
          deadlineMs: callDeadlineMs(call),
          metadata: forwardedMetadata(call),
          onCancel: (cancel) => call.once('cancelled', cancel),
        })
        .then((a) => answer(cb, a));
    },
    modelStreamInfer: (call: { emit(e: string, err: unknown): void }) =>
      call.emit('error', { code: Status.UNIMPLEMENTED, details: 'ModelStreamInfer is not proxied by the gateway' }),
  };
}

export type GatewayGrpcHandle = GrpcServerHandle;

export async function startGatewayGrpc(gw: Gateway, host: string, port: number): Promise<GatewayGrpcHandle> {
  const server = new Server({
    'grpc.max_receive_message_length': gw.opts.maxMessageBytes,
    'grpc.max_send_message_length': gw.opts.maxMessageBytes,
  });
  const raw = (b: Buffer) => b;
  const definition = Object.fromEntries(
    Object.entries(GRPCInferenceService).map(([k, m]) => [
      k,
      k === 'modelStreamInfer' ? m : { ...m, requestDeserialize: raw, responseSerialize: raw },
    ]),
  );
  server.addService(definition as unknown as typeof GRPCInferenceService, buildGatewayImplementation(gw));
  server.addService(HealthService, {
    check: (_c: unknown, cb: sendUnaryData<HealthCheckResponse>) =>
      cb(null, {
        status: gw.fleet.anyReady()
          ? HealthCheckResponse_ServingStatus.SERVING
          : HealthCheckResponse_ServingStatus.NOT_SERVING,
      }),
    watch: (call: { emit(e: string, err: unknown): void }) =>
      call.emit('error', { code: Status.UNIMPLEMENTED, details: 'Watch is not supported' }),
  });
  return listenGrpc(server, host, port);
}
