/**
 * A stand-in worker for the gateway's placement tests: gRPC readiness and a repository index of
 * three models, and one HTTP port answering /metrics and the console session of the token
 * `Bearer op` (an operator, token id tk-op).
 */
import { createServer, type Server } from 'node:http';
import { Server as GrpcServer, ServerCredentials, type sendUnaryData } from '@grpc/grpc-js';
import { GRPCInferenceService, RepositoryIndexResponse, ServerReadyResponse } from '@hloserve/proto';

export interface StandIn {
  grpc: GrpcServer;
  grpcPort: number;
  http: Server;
  httpPort: number;
}

export const MODELS = ['a', 'b', 'c'];

export async function standIn(): Promise<StandIn> {
  const grpc = new GrpcServer();
  const raw = (b: Buffer) => b;
  const def = Object.fromEntries(
    Object.entries(GRPCInferenceService).map(([k, m]) => [
      k,
      { ...m, requestDeserialize: raw, responseSerialize: raw },
    ]),
  );
  grpc.addService(def as unknown as typeof GRPCInferenceService, {
    serverReady: (_c: unknown, cb: sendUnaryData<Buffer>) =>
      cb(null, Buffer.from(ServerReadyResponse.encode({ ready: true }).finish())),
    repositoryIndex: (_c: unknown, cb: sendUnaryData<Buffer>) =>
      cb(
        null,
        Buffer.from(
          RepositoryIndexResponse.encode({
            models: MODELS.map((m) => ({ name: m, version: '1', state: 'READY', reason: '' })),
          }).finish(),
        ),
      ),
    modelStatistics: (_c: unknown, cb: sendUnaryData<Buffer>) => cb(null, Buffer.alloc(0)),
    modelConfig: (_c: unknown, cb: sendUnaryData<Buffer>) => cb(null, Buffer.alloc(0)),
  });
  const grpcPort = await new Promise<number>((resolve, reject) =>
    grpc.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
  );
  const http = createServer((req, res) => {
    if (req.url === '/api/v1/session' && req.headers.authorization === 'Bearer op') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({ data: { actor: 'token:tk-op', name: 'nightly-ops', scope: 'operator', tokenId: 'tk-op' } }),
      );
    } else if (req.url === '/metrics') res.end('');
    else res.writeHead(401).end('{}');
  });
  const httpPort = await new Promise<number>((r) =>
    http.listen(0, '127.0.0.1', () => r((http.address() as { port: number }).port)),
  );
  return { grpc, grpcPort, http, httpPort };
}
