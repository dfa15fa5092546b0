import assert from 'node:assert/strict';
import { Agent, request } from 'node:http';
import { after, before, suite, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { startControl, startMlpWorker, tempDir, type Harness } from '../control/harness.js';
import type { Worker } from '../../src/worker/worker.js';
import { startSurface, type Surface } from './surface.js';

/**
 * A keep-alive request whose body is half sent: in flight until `finish()`. Its connection stays
 * in the agent's pool after the answer, as a browser's or tritonclient's does.
 */
function halfSent(port: number, path: string, body: string, agent: Agent) {
  const req = request({
    host: '127.0.0.1',
    port,
    path,
    method: 'POST',
    agent,
    headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
  });
  const status = new Promise<number>((resolve, reject) => {
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
  });
  req.write(body.slice(0, 10));
  return { status, finish: () => req.end(body.slice(10)) };
}

/** Closes `app` while a keep-alive request is in flight; how long the close took, and the answer. */
async function closeWithRequestInFlight(app: FastifyInstance, path: string, body: string) {
  await app.listen({ host: '127.0.0.1', port: 0 });
  const port = (app.server.address() as { port: number }).port;
  const agent = new Agent({ keepAlive: true });
  try {
    const call = halfSent(port, path, body, agent);
    await new Promise((r) => setTimeout(r, 50));
    const start = performance.now();
    let timer: NodeJS.Timeout | undefined;
    const closed = app.close().then(() => performance.now() - start);
    const bound = new Promise<number>((r) => (timer = setTimeout(() => r(Infinity), 10_000)));
    await new Promise((r) => setTimeout(r, 50));
    call.finish();
    const status = await call.status;
    const ms = await Promise.race([closed, bound]);
    clearTimeout(timer);
    return { status, ms };
  } finally {
    agent.destroy();
    app.server.closeAllConnections();
  }
}

const row = JSON.stringify({
  inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 784], data: new Array(784).fill(0.25) }],
});

suite('a graceful close answers what is in flight, then closes its keep-alive connections', () => {
  let s: Surface;
  let worker: Worker;
  let h: Harness;
  before(async () => {
    s = await startSurface();
    worker = await startMlpWorker();
    h = await startControl(worker, tempDir());
  });
  after(async () => {
    await s.close();
    await h.close();
    await worker.stop(false);
  });

  test('the KServe HTTP port: the request is served and the close does not wait for the keep-alive timeout', async () => {
    const { status, ms } = await closeWithRequestInFlight(s.http, '/v2/models/mlp/infer', row);
    assert.equal(status, 200);
    assert.ok(ms < 3_000, `closed after ${ms} ms`);
  });

  test('the control API and console port: the same', async () => {
    const body = JSON.stringify({ setupToken: 'not the token', name: 'late' });
    const { status, ms } = await closeWithRequestInFlight(h.control.app, '/api/v1/setup', body);
    assert.ok(status >= 200 && status < 500, `answered ${status}`);
    assert.ok(ms < 3_000, `closed after ${ms} ms`);
  });
});
