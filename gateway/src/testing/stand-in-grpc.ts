/**
 * For tests of the gateway and the supervisor: a gRPC server that stands in for a worker's KServe
 * port as the fleet sees it (ready, a repository index of the given models, empty statistics and
 * config), with no engine behind it. Shared so both packages' tests make it one way.
 */
import { Server as GrpcServer, ServerCredentials, type sendUnaryData } from '@grpc/grpc-js';
import { GRPCInferenceService, RepositoryIndexResponse, ServerReadyResponse } from '@hloserve/proto';

export interface StandInGrpc {
  readonly grpc: GrpcServer;
  readonly grpcPort: number;
}

export async function standInGrpc(models: readonly string[]): Promise<StandInGrpc> {
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
            models: models.map((m) => ({ name: m, version: '1', state: 'READY', reason: '' })),
          }).finish(),
        ),
      ),
    modelStatistics: (_c: unknown, cb: sendUnaryData<Buffer>) => cb(null, Buffer.alloc(0)),
    modelConfig: (_c: unknown, cb: sendUnaryData<Buffer>) => cb(null, Buffer.alloc(0)),
  });
  const grpcPort = await new Promise<number>((resolve, reject) =>
    grpc.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
  );
  return { grpc, grpcPort };
}
