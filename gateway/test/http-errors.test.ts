/**
 * The gateway's own HTTP refusals (not a worker's answers, which pass through as they are) speak the
 * catalogue like the worker's: `{error, code}` with the code's status, and a client that sent too
 * much gets the answer, not a reset.
 */
import assert from 'node:assert/strict';
import { createServer, request, type Server } from 'node:http';
import { connect } from 'node:net';
import { after, before, suite, test } from 'node:test';
import type { Server as GrpcServer } from '@grpc/grpc-js';
import { serveGateway, type RunningGateway } from '@hloserve/gateway';
import { standInGrpc } from '@hloserve/gateway/testing/stand-in-grpc';

interface Answer {
  status: number;
  body: { error?: string; code?: string };
}

function send(
  port: number,
  path: string,
  headers: Record<string, string> = {},
  body = Buffer.alloc(0),
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'POST', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, body: text === '' ? {} : (JSON.parse(text) as Answer['body']) });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

suite("the gateway's own HTTP refusals are catalogue errors", () => {
  let grpc: GrpcServer;
  let gw: RunningGateway;
  before(async () => {
    const w = await standInGrpc(['a']);
    grpc = w.grpc;
    gw = await serveGateway(
      {
        workers: [{ name: 'w0', address: { grpc: `127.0.0.1:${w.grpcPort}`, http: '127.0.0.1:1', metrics: null } }],
        maxMessageBytes: 1024,
      },
      { host: '127.0.0.1', grpcPort: 0, httpPort: 0, metricsPort: -1 },
    );
  });
  after(async () => {
    await gw.stop();
    grpc.forceShutdown();
  });

  test('a bad percent-encoding in the model name: 400 INVALID_ARGUMENT (was 500 "URI malformed")', async () => {
    const r = await send(
      gw.ports.http,
      '/v2/models/%zz/infer',
      { 'content-type': 'application/json' },
      Buffer.from('{}'),
    );
    assert.equal(r.status, 400);
    assert.equal(r.body.code, 'HLO_ERR_INVALID_ARGUMENT');
    assert.match(r.body.error ?? '', /percent-encoding/);
  });

  test('a malformed x-timeout-ms: 400 INVALID_ARGUMENT', async () => {
    const r = await send(gw.ports.http, '/v2/models/a/infer', { 'x-timeout-ms': 'soon' });
    assert.equal(r.status, 400);
    assert.equal(r.body.code, 'HLO_ERR_INVALID_ARGUMENT');
  });

  test('failures the gateway answers for itself: an unknown model 404 MODEL_NOT_FOUND, a holder out of reach 503', async () => {
    const unknown = await send(gw.ports.http, '/v2/models/nope/infer', {}, Buffer.from('{}'));
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.code, 'HLO_ERR_MODEL_NOT_FOUND');
    // The stand-in's HTTP address has nothing listening: the one holder cannot be reached.
    const away = await send(gw.ports.http, '/v2/models/a/infer', {}, Buffer.from('{}'));
    assert.equal(away.status, 503);
    assert.equal(away.body.code, 'HLO_ERR_SHUTTING_DOWN');
    assert.match(away.body.error ?? '', /ECONNREFUSED/);
  });

  test("a request Node's parser refuses (bytes a GET did not frame): the catalogue's 400, not Node's bare one", async () => {
    const sock = connect(gw.ports.http, '127.0.0.1');
    const chunks: Buffer[] = [];
    sock.on('data', (c: Buffer) => chunks.push(c));
    sock.write('GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n{"inputs":[]}\r\n\r\n');
    await new Promise((r) => sock.once('close', r));
    const text = Buffer.concat(chunks).toString('utf8');
    assert.match(text, /^HTTP\/1\.1 200 /);
    assert.match(text, /HTTP\/1\.1 400 Bad Request\r\n[\s\S]*"code":"HLO_ERR_INVALID_ARGUMENT"/);
  });

  test('a body past the limit: the client reads 413 MESSAGE_TOO_LARGE, and the gateway goes on serving', async () => {
    const r = await send(gw.ports.http, '/v2/models/a/infer', {}, Buffer.alloc(64 * 1024, 0x20));
    assert.equal(r.status, 413);
    assert.equal(r.body.code, 'HLO_ERR_MESSAGE_TOO_LARGE');
    const again = await send(gw.ports.http, '/v2/models/%zz/infer');
    assert.equal(again.status, 400);
  });
});

suite('a client that goes away mid-request through the HTTP proxy', () => {
  let grpc: GrpcServer;
  let http: Server;
  let gw: RunningGateway;
  let served = 0;
  before(async () => {
    const w = await standInGrpc(['a']);
    grpc = w.grpc;
    // The worker's HTTP port, answering after 150 ms: time for the client to leave first.
    http = createServer((_req, res) => {
      setTimeout(() => {
        served++;
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      }, 150);
    });
    const port = await new Promise<number>((r) =>
      http.listen(0, '127.0.0.1', () => r((http.address() as { port: number }).port)),
    );
    gw = await serveGateway(
      {
        workers: [
          { name: 'w0', address: { grpc: `127.0.0.1:${w.grpcPort}`, http: `127.0.0.1:${port}`, metrics: null } },
        ],
      },
      { host: '127.0.0.1', grpcPort: 0, httpPort: 0, metricsPort: -1 },
    );
  });
  after(async () => {
    await gw.stop();
    grpc.forceShutdown();
    http.closeAllConnections();
    http.close();
  });

  test('is a cancellation: the worker stays up and its models routed (it was marked down as if it had died)', async () => {
    const req = request({ host: '127.0.0.1', port: gw.ports.http, path: '/v2/models/a/infer', method: 'POST' });
    req.on('error', () => {});
    req.end('{}');
    await new Promise((r) => setTimeout(r, 50));
    req.destroy();
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(gw.gateway.fleet.workers.get('w0')!.ready, true);
    const next = await send(gw.ports.http, '/v2/models/a/infer', {}, Buffer.from('{}'));
    assert.equal(next.status, 200, JSON.stringify(next.body));
    assert.ok(served >= 1);
  });
});
