/**
 * The gateway's own HTTP refusals (not a worker's answers, which pass through as they are) speak the
 * catalogue like the worker's: `{error, code}` with the code's status, and a client that sent too
 * much gets the answer, not a reset.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
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

  test('a body past the limit: the client reads 413 MESSAGE_TOO_LARGE, and the gateway goes on serving', async () => {
    const r = await send(gw.ports.http, '/v2/models/a/infer', {}, Buffer.alloc(64 * 1024, 0x20));
    assert.equal(r.status, 413);
    assert.equal(r.body.code, 'HLO_ERR_MESSAGE_TOO_LARGE');
    const again = await send(gw.ports.http, '/v2/models/%zz/infer');
    assert.equal(again.status, 400);
  });
});
