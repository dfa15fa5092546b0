import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, credentials, Metadata, type ServiceError } from '@grpc/grpc-js';
import type { FastifyInstance } from 'fastify';
import { defaultConfig, workerSettings } from '../../src/config/node-config.js';
import { startGrpcServer, type GrpcServerHandle } from '../../src/transports/grpc-server.js';
import { buildHttpServer, type HttpServerOptions } from '../../src/transports/http-server.js';
import { createLogger } from '../../src/log.js';
import { Worker } from '../../src/worker/worker.js';
import { addControlService } from '../../src/control/control-grpc.js';
import { ControlService } from '../../src/control/control-service.js';

export const examples = resolve(fileURLToPath(import.meta.url), '..', '..', '..', '..', '..', 'examples', 'models');

/**
 * The whole inference surface in one process: a real Worker serving the example mlp on the CPU
 * plugin, its gRPC server on a free port and its HTTP app (for inject, or listening), plus a raw
 * gRPC client that sends bytes as they are, so tests can send what no generated client would.
 */
export interface Surface {
  readonly worker: Worker;
  readonly grpc: GrpcServerHandle;
  readonly http: FastifyInstance;
  readonly client: Client;
  /** A raw unary call: bytes in, bytes or a ServiceError out. */
  unary(method: string, body: Buffer, deadline?: Date | number): Promise<{ err: ServiceError | null; res?: Buffer }>;
  /** A raw unary call to any method on the port, by its full path (the ControlService is there too). */
  call(path: string, body: Buffer, deadline?: Date | number): Promise<{ err: ServiceError | null; res?: Buffer }>;
  close(): Promise<void>;
}

export async function startSurface(
  http: HttpServerOptions = {},
  limits: { maxRecvMsgBytes?: number; maxSendMsgBytes?: number } = {},
): Promise<Surface> {
  const config = defaultConfig(examples);
  const settings = workerSettings(config);
  const worker = await Worker.start({
    modelRepo: examples,
    settings: {
      ...settings,
      modelsInclude: ['mlp'],
      endpoints: { ...settings.endpoints, ...limits },
    },
    log: createLogger('silent'),
  });
  const grpc = await startGrpcServer(worker, '127.0.0.1', 0, (server) =>
    addControlService(server, new ControlService(worker)),
  );
  const app = buildHttpServer(worker, http);
  await app.ready();
  const client = new Client(`127.0.0.1:${grpc.port}`, credentials.createInsecure(), {
    'grpc.max_receive_message_length': -1,
    'grpc.max_send_message_length': -1,
  });
  const call: Surface['call'] = (path, body, deadline) =>
    new Promise((done) =>
      client.makeUnaryRequest(
        path,
        (b: Buffer) => b,
        (b: Buffer) => b,
        body,
        new Metadata(),
        deadline === undefined ? {} : { deadline },
        (err, res) => done({ err, res }),
      ),
    );
  return {
    worker,
    grpc,
    http: app,
    client,
    call,
    unary: (method, body, deadline) => call(`/inference.GRPCInferenceService/${method}`, body, deadline),
    async close() {
      client.close();
      await app.close();
      await grpc.close(1000);
      await worker.stop(false);
    },
  };
}
