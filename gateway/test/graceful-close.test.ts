/**
 * A gateway stopped while an HTTP request is in flight answers it, then closes the client's
 * keep-alive connection instead of waiting for its keep-alive timeout.
 */
import assert from 'node:assert/strict';
import { Agent, createServer, request, type Server } from 'node:http';
import { after, before, suite, test } from 'node:test';
import type { Server as GrpcServer } from '@grpc/grpc-js';
import { listen } from '@hloserve/common/listen';
import { serveGateway, type RunningGateway } from '@hloserve/gateway';
import { standInGrpc } from '@hloserve/gateway/testing/stand-in-grpc';

suite('a gateway stop with an HTTP request in flight', () => {
  let grpc: GrpcServer;
  let backend: Server;
  let gw: RunningGateway;
  before(async () => {
    const w = await standInGrpc(['a']);
    grpc = w.grpc;
    // The worker's HTTP port: answers 300 ms after a request arrives.
    backend = createServer((req, res) => {
      req.resume();
      req.on('end', () => setTimeout(() => res.end('{}'), 300));
    });
    const httpPort = await listen(backend, '127.0.0.1', 0);
    gw = await serveGateway(
      {
        workers: [
          { name: 'w0', address: { grpc: `127.0.0.1:${w.grpcPort}`, http: `127.0.0.1:${httpPort}`, metrics: null } },
        ],
      },
      { host: '127.0.0.1', grpcPort: 0, httpPort: 0, metricsPort: -1 },
    );
  });
  after(() => {
    grpc.forceShutdown();
    backend.closeAllConnections();
    backend.close();
  });

  test('the request is answered and the stop does not wait for the keep-alive timeout', async () => {
    const agent = new Agent({ keepAlive: true });
    try {
      const status = new Promise<number>((resolve, reject) => {
        request(
          { host: '127.0.0.1', port: gw.ports.http, path: '/v2/models/a/infer', method: 'POST', agent },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          },
        )
          .on('error', reject)
          .end('{"inputs":[]}');
      });
      await new Promise((r) => setTimeout(r, 100));
      const start = performance.now();
      let timer: NodeJS.Timeout | undefined;
      const stopped = gw.stop().then(() => performance.now() - start);
      const bound = new Promise<number>((r) => (timer = setTimeout(() => r(Infinity), 10_000)));
      assert.equal(await status, 200);
      const ms = await Promise.race([stopped, bound]);
      clearTimeout(timer);
      assert.ok(ms < 3_000, `stopped after ${ms} ms`);
    } finally {
      agent.destroy();
    }
  });
});
