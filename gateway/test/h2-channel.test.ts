/**
 * How the frame-level worker channel reports a call that failed, since that decides whether the
 * gateway may send it to another replica (routing/status.ts): never connected, not processed by
 * the worker (REFUSED_STREAM, past its GOAWAY), or dropped while the worker held it. The workers
 * here are raw sockets that answer with exactly the frames under test.
 */
import assert from 'node:assert/strict';
import { createServer, type Socket } from 'node:net';
import { suite, test } from 'node:test';
import { status as Status } from '@grpc/grpc-js';
import {
  CLIENT_PREFACE,
  ERR_REFUSED_STREAM,
  FLAG_END_HEADERS,
  FLAG_END_STREAM,
  FRAME_DATA,
  FRAME_HEADERS,
  frame,
  FrameReader,
  goawayFrame,
  rstStreamFrame,
  settingsFrame,
} from '@hloserve/common/h2/frame/frame-codec';
import { encodeHeaders } from '@hloserve/common/h2/frame/hpack';
import { classifyFailure } from '../src/routing/status.js';
import { WorkerChannel } from '../src/h2/worker-channel.js';

interface RawWorker {
  readonly port: number;
  close(): void;
}

/** A worker that answers each request's HEADERS with what `onRequest` writes. */
async function rawWorker(onRequest: (sock: Socket, streamId: number) => void): Promise<RawWorker> {
  const sockets = new Set<Socket>();
  const server = createServer((sock) => {
    sockets.add(sock);
    sock.on('error', () => {});
    let preface = Buffer.alloc(0);
    const r = new FrameReader((type, _flags, id) => {
      if (type === FRAME_HEADERS) onRequest(sock, id);
    }, 1 << 24);
    sock.write(settingsFrame([]));
    sock.on('data', (c: Buffer) => {
      if (preface.length < CLIENT_PREFACE.length) {
        preface = Buffer.concat([preface, c]);
        if (preface.length < CLIENT_PREFACE.length) return;
        c = preface.subarray(CLIENT_PREFACE.length);
      }
      r.push(c);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

const outcome = (a: { code?: number; details?: string }) => classifyFailure({ code: a.code!, details: a.details! });
/** One call on a fresh channel, closed after. */
const call = async (ch: WorkerChannel) => {
  const a = await ch.call('/x.Y/Z', Buffer.from('hi'), null, undefined, undefined, false);
  ch.close();
  return a;
};

suite('the frame-level worker channel: how a failed call is reported', () => {
  test('a refused connection: never connected (may go to another replica)', async () => {
    const free = createServer();
    await new Promise<void>((r) => free.listen(0, '127.0.0.1', r));
    const port = (free.address() as { port: number }).port;
    await new Promise<void>((r) => free.close(() => r()));
    const a = await call(new WorkerChannel(`127.0.0.1:${port}`, 1 << 20));
    assert.equal(a.code, Status.UNAVAILABLE);
    assert.match(a.details!, /No connection established/);
    assert.equal(outcome(a), 'not_run');
  });

  test('REFUSED_STREAM and a GOAWAY below the stream: not processed', async () => {
    const refusing = await rawWorker((sock, id) => sock.write(rstStreamFrame(id, ERR_REFUSED_STREAM)));
    const a = await call(new WorkerChannel(`127.0.0.1:${refusing.port}`, 1 << 20));
    assert.equal(a.code, Status.UNAVAILABLE);
    assert.match(a.details!, /not processed/);
    assert.equal(outcome(a), 'not_run');
    const goingAway = await rawWorker((sock) => sock.write(goawayFrame(0, 0)));
    const b = await call(new WorkerChannel(`127.0.0.1:${goingAway.port}`, 1 << 20));
    assert.match(b.details!, /not processed/);
    assert.equal(outcome(b), 'not_run');
    refusing.close();
    goingAway.close();
  });

  test('the connection cut after the worker took the call: dropped (it may have run)', async () => {
    const dying = await rawWorker((sock) => sock.destroy());
    const a = await call(new WorkerChannel(`127.0.0.1:${dying.port}`, 1 << 20));
    assert.equal(a.code, Status.UNAVAILABLE);
    assert.match(a.details!, /Connection dropped/);
    assert.equal(outcome(a), 'dropped');
    dying.close();
  });

  test("a worker's answer over the size cap is RESOURCE_EXHAUSTED; a trailers-only error keeps its code", async () => {
    const big = await rawWorker((sock, id) => {
      const body = Buffer.alloc(5 + 4096);
      body.writeUInt32BE(4096, 1);
      sock.write(
        Buffer.concat([
          frame(
            FRAME_HEADERS,
            FLAG_END_HEADERS,
            id,
            encodeHeaders([':status', '200', 'content-type', 'application/grpc']),
          ),
          frame(FRAME_DATA, 0, id, body),
        ]),
      );
    });
    const a = await call(new WorkerChannel(`127.0.0.1:${big.port}`, 1024));
    assert.equal(a.code, Status.RESOURCE_EXHAUSTED);
    const failing = await rawWorker((sock, id) =>
      sock.write(
        frame(
          FRAME_HEADERS,
          FLAG_END_HEADERS | FLAG_END_STREAM,
          id,
          encodeHeaders([':status', '200', 'grpc-status', '5', 'grpc-message', 'no%20such%20model']),
        ),
      ),
    );
    const b = await call(new WorkerChannel(`127.0.0.1:${failing.port}`, 1024));
    assert.deepEqual(b, { ok: false, code: Status.NOT_FOUND, details: 'no such model' });
    big.close();
    failing.close();
  });
});
