/**
 * A stand-in worker for the gateway's placement tests: gRPC readiness and a repository index of
 * three models, and one HTTP port answering /metrics and the console session of the token
 * `Bearer op` (an operator, token id tk-op).
 */
import { createServer, type Server } from 'node:http';
import type { Server as GrpcServer } from '@grpc/grpc-js';
import { standInGrpc } from '@hloserve/gateway/testing/stand-in-grpc';

export interface StandIn {
  grpc: GrpcServer;
  grpcPort: number;
  http: Server;
  httpPort: number;
}

export const MODELS = ['a', 'b', 'c'];

export async function standIn(): Promise<StandIn> {
  const { grpc, grpcPort } = await standInGrpc(MODELS);
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
