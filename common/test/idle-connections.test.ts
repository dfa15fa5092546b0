import assert from 'node:assert/strict';
import { Agent, createServer, request, type Server } from 'node:http';
import { suite, test } from 'node:test';
import { closeIdleUntilClosed } from '../src/idle-connections.js';
import { listen } from '../src/listen.js';

/** A keep-alive request whose answer the server sends `answerAfterMs` after it arrives. */
function slowServer(answerAfterMs: number): Server {
  const server = createServer((_req, res) => setTimeout(() => res.end('ok'), answerAfterMs));
  server.keepAliveTimeout = 72_000;
  return server;
}

function get(port: number, agent: Agent): Promise<number> {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    })
      .on('error', reject)
      .end();
  });
}

/** ms until `server` has closed, or Infinity past `boundMs`. */
function closedWithin(server: Server, boundMs: number, start: number): Promise<number> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(Infinity), boundMs);
    server.once('close', () => {
      clearTimeout(timer);
      resolve(performance.now() - start);
    });
  });
}

/** Closes a server while one keep-alive request is in flight: its answer, and ms until closed. */
async function closeWithOneInFlight(
  answerAfterMs: number,
  helper: boolean,
  boundMs: number,
): Promise<{ status: number; ms: number }> {
  const server = slowServer(answerAfterMs);
  const port = await listen(server, '127.0.0.1', 0);
  const agent = new Agent({ keepAlive: true });
  try {
    const answered = get(port, agent);
    await new Promise((r) => setTimeout(r, 30));
    const start = performance.now();
    server.close();
    if (helper) closeIdleUntilClosed(server, 20);
    const closed = closedWithin(server, boundMs, start);
    return { status: await answered, ms: await closed };
  } finally {
    agent.destroy();
    server.closeAllConnections();
  }
}

suite('closeIdleUntilClosed', () => {
  test('a keep-alive connection whose request was in flight at close() is closed once answered', async () => {
    const { status, ms } = await closeWithOneInFlight(150, true, 3_000);
    assert.equal(status, 200, 'the request in flight is answered');
    assert.ok(ms < 1_000, `closed ${ms} ms after close(), not at the keep-alive timeout`);
  });

  test('without it, the same connection holds close() open (what it is for)', async () => {
    const { status, ms } = await closeWithOneInFlight(100, false, 600);
    assert.equal(status, 200);
    assert.equal(ms, Infinity);
  });

  test('an idle server closes at once and the timer goes with it', async () => {
    const server = slowServer(0);
    await listen(server, '127.0.0.1', 0);
    const start = performance.now();
    server.close();
    closeIdleUntilClosed(server);
    assert.ok((await closedWithin(server, 1_000, start)) < 1_000);
  });
});
