/**
 * The frame server spoken to byte by byte: the connection-level frames a client library rarely
 * sends (PING, a header block split over CONTINUATION, padded DATA) are answered as RFC 9113
 * says, and closing is graceful (GOAWAY, the call in flight still answered, then the socket goes).
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, Socket } from 'node:net';
import { suite, test } from 'node:test';
import { Client, credentials, Metadata } from '@grpc/grpc-js';
import {
  CLIENT_PREFACE,
  FLAG_ACK,
  FLAG_END_HEADERS,
  FLAG_END_STREAM,
  FLAG_PADDED,
  FRAME_CONTINUATION,
  FRAME_DATA,
  FRAME_GOAWAY,
  FRAME_HEADERS,
  FRAME_PING,
  FRAME_SETTINGS,
  FRAME_WINDOW_UPDATE,
  frame,
  FrameReader,
  settingsFrame,
  windowUpdateFrame,
} from '../../src/h2/frame/frame-codec.js';
import { encodeHeaders, HpackDecoder } from '../../src/h2/frame/hpack.js';
import { listenGrpcFrames, type StreamHandler, type UnaryHandler } from '../../src/h2/frame-server.js';
import type { RawAnswer } from '../../src/h2/grpc-wire.js';

const PATH = '/test.Echo/Unary';

type Seen = { type: number; flags: number; id: number; payload: Buffer };

/** Collects frames from a raw socket; `until` resolves once a frame matching it arrived. */
function frames(sock: Socket) {
  const seen: Seen[] = [];
  const waiters: { match: (f: Seen) => boolean; resolve: () => void }[] = [];
  const r = new FrameReader((type, flags, id, payload) => {
    seen.push({ type, flags, id, payload: Buffer.from(payload) });
    for (const w of [...waiters])
      if (w.match(seen.at(-1)!)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
  }, 1 << 24);
  sock.on('data', (c: Buffer) => r.push(c));
  sock.on('error', () => {});
  return {
    seen,
    until: (match: (f: Seen) => boolean) =>
      seen.some(match) ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ match, resolve })),
  };
}

/** A gRPC request's header block for `path`. */
const requestHeaders = (path: string): Buffer =>
  encodeHeaders([
    ':method',
    'POST',
    ':scheme',
    'http',
    ':path',
    path,
    ':authority',
    'test',
    'content-type',
    'application/grpc',
    'te',
    'trailers',
  ]);

const echo: UnaryHandler = (c): RawAnswer => ({ ok: true, body: c.request });

suite('the frame server, byte by byte', () => {
  test('SETTINGS and PING are acknowledged; a request split over CONTINUATION with padded DATA is answered', async () => {
    const gw = await listenGrpcFrames(new Map([[PATH, echo]]), '127.0.0.1', 0, { maxRecvBytes: 1 << 20 });
    const sock = connect(gw.port, '127.0.0.1');
    const f = frames(sock);
    const block = requestHeaders(PATH);
    const msg = Buffer.from([0, 0, 0, 0, 3, 0x61, 0x62, 0x63]);
    const padded = Buffer.concat([Buffer.from([4]), msg, Buffer.alloc(4)]);
    sock.write(
      Buffer.concat([
        CLIENT_PREFACE,
        settingsFrame([]),
        frame(FRAME_PING, 0, 0, Buffer.from('pingpong')),
        frame(FRAME_HEADERS, 0, 1, block.subarray(0, 5)),
        frame(FRAME_CONTINUATION, 0, 1, block.subarray(5, 9)),
        frame(FRAME_CONTINUATION, FLAG_END_HEADERS, 1, block.subarray(9)),
        frame(FRAME_DATA, FLAG_PADDED | FLAG_END_STREAM, 1, padded),
      ]),
    );
    await f.until((x) => x.type === FRAME_HEADERS && (x.flags & FLAG_END_STREAM) !== 0);
    assert.ok(f.seen.some((x) => x.type === FRAME_SETTINGS && x.flags === 0));
    assert.ok(f.seen.some((x) => x.type === FRAME_SETTINGS && x.flags === FLAG_ACK));
    const pong = f.seen.find((x) => x.type === FRAME_PING);
    assert.equal(pong?.flags, FLAG_ACK);
    assert.equal(pong?.payload.toString(), 'pingpong');
    const dec = new HpackDecoder();
    const onStream = f.seen.filter((x) => x.id === 1);
    assert.deepEqual(
      onStream.map((x) => x.type),
      [FRAME_HEADERS, FRAME_DATA, FRAME_HEADERS],
    );
    assert.deepEqual(dec.decode(onStream[0]!.payload).slice(0, 2), [':status', '200']);
    assert.deepEqual(onStream[1]!.payload, msg);
    assert.deepEqual(dec.decode(onStream[2]!.payload), ['grpc-status', '0']);
    sock.destroy();
    await gw.close(100);
  });

  test('300 mutated request streams (seeded) never take the server down; a clean call still succeeds', async () => {
    const gw = await listenGrpcFrames(new Map([[PATH, echo]]), '127.0.0.1', 0, { maxRecvBytes: 1 << 20 });
    const block = encodeHeaders([
      ':method',
      'POST',
      ':scheme',
      'http',
      ':path',
      PATH,
      'content-type',
      'application/grpc',
    ]);
    const good = Buffer.concat([
      CLIENT_PREFACE,
      settingsFrame([[4, 1 << 20]]),
      frame(FRAME_HEADERS, FLAG_END_HEADERS, 1, block),
      frame(FRAME_DATA, FLAG_END_STREAM, 1, Buffer.from([0, 0, 0, 0, 2, 0x68, 0x69])),
      frame(FRAME_PING, 0, 0, Buffer.alloc(8)),
    ]);
    let seed = 0x9e3779b9;
    const rand = (n: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed % n;
    };
    for (let i = 0; i < 300; i++) {
      const bytes = Buffer.from(good);
      // Mutate only after the preface most of the time, so the frame layer is what is exercised.
      for (let k = 0; k < 1 + rand(4); k++) {
        const at =
          rand(10) === 0 ? rand(bytes.length) : CLIENT_PREFACE.length + rand(bytes.length - CLIENT_PREFACE.length);
        bytes[at] = rand(256);
      }
      const sock = connect(gw.port, '127.0.0.1');
      sock.on('error', () => {});
      sock.on('data', () => {});
      sock.end(bytes);
      await once(sock, 'close');
    }
    const client = new Client(`127.0.0.1:${gw.port}`, credentials.createInsecure());
    const raw = (b: Buffer) => b;
    const res = await new Promise<Buffer | undefined>((resolve, reject) =>
      client.makeUnaryRequest(PATH, raw, raw, Buffer.from('alive'), new Metadata(), {}, (err, r) =>
        err ? reject(err) : resolve(r),
      ),
    );
    assert.equal(res!.toString(), 'alive');
    client.close();
    await gw.close(100);
  });

  test('close sends GOAWAY, still answers the call in flight, then resolves', async () => {
    let release!: () => void;
    let entered!: () => void;
    const started = new Promise<void>((r) => (entered = r));
    const slow: UnaryHandler = (c) =>
      new Promise<RawAnswer>((resolve) => {
        release = () => resolve({ ok: true, body: c.request });
        entered();
      });
    const server = await listenGrpcFrames(new Map([[PATH, slow]]), '127.0.0.1', 0, { maxRecvBytes: 1 << 20 });
    const client = new Client(`127.0.0.1:${server.port}`, credentials.createInsecure());
    const raw = (b: Buffer) => b;
    const answered = new Promise<{ err: unknown; res?: Buffer }>((resolve) =>
      client.makeUnaryRequest(PATH, raw, raw, Buffer.from('late'), new Metadata(), {}, (err, res) =>
        resolve({ err, res }),
      ),
    );
    await started;
    // A raw connection sees the GOAWAY.
    const sock = connect(server.port, '127.0.0.1');
    const f = frames(sock);
    sock.write(Buffer.concat([CLIENT_PREFACE, settingsFrame([])]));
    await f.until((x) => x.type === FRAME_SETTINGS);
    const closed = server.close(5000);
    await f.until((x) => x.type === FRAME_GOAWAY);
    release();
    const { err, res } = await answered;
    assert.equal(err, null);
    assert.equal(res!.toString(), 'late');
    await closed;
    client.close();
    if (!sock.destroyed) await once(sock, 'close');
  });
});

suite("the frame server's writes", () => {
  test('answers that settle in one tick leave in one writev, each intact', async () => {
    const n = 4;
    const pending: (() => void)[] = [];
    const batch: UnaryHandler = (c) =>
      new Promise<RawAnswer>((resolve) => {
        pending.push(() => resolve({ ok: true, body: c.request }));
        // The last request of the "batch" settles all of them in one loop, as a coalesced execution does.
        if (pending.length === n) for (const settle of pending.splice(0)) settle();
      });
    const server = await listenGrpcFrames(new Map([[PATH, batch]]), '127.0.0.1', 0, { maxRecvBytes: 1 << 20 });
    const client = new Client(`127.0.0.1:${server.port}`, credentials.createInsecure());
    const raw = (b: Buffer) => b;
    // Every write the server's socket makes, by the number of buffers in it.
    const writes: number[] = [];
    const proto = Socket.prototype as unknown as {
      _write: (c: Buffer, e: string, cb: () => void) => void;
      _writev: (cs: { chunk: Buffer }[], cb: () => void) => void;
    };
    const { _write, _writev } = proto;
    const serverSide = (s: Socket) => s.localPort === server.port;
    proto._write = function (this: Socket, c, e, cb) {
      if (serverSide(this)) writes.push(1);
      return _write.call(this, c, e, cb);
    };
    proto._writev = function (this: Socket, cs, cb) {
      if (serverSide(this)) writes.push(cs.length);
      return _writev.call(this, cs, cb);
    };
    try {
      const call = (body: string) =>
        new Promise<string>((resolve, reject) =>
          client.makeUnaryRequest(PATH, raw, raw, Buffer.from(body), new Metadata(), {}, (err, res) =>
            err ? reject(err) : resolve(res!.toString()),
          ),
        );
      const bodies = Array.from({ length: n }, (_, i) => `answer-${i}`);
      const answers = await Promise.all(bodies.map(call));
      assert.deepEqual(answers, bodies);
      assert.ok(
        writes.some((w) => w >= n),
        `the ${n} answers went out in one writev; the server's writes carried ${JSON.stringify(writes)} buffers`,
      );
    } finally {
      proto._write = _write;
      proto._writev = _writev;
      client.close();
      await server.close(100);
    }
  });
});

suite('the frame server and a client that never speaks', () => {
  test('a connection without a preface and SETTINGS is closed after the handshake time; one that spoke stays', async () => {
    const gw = await listenGrpcFrames(new Map([[PATH, echo]]), '127.0.0.1', 0, {
      maxRecvBytes: 1 << 20,
      handshakeMs: 150,
    });
    try {
      const t0 = Date.now();
      const silent = connect(gw.port, '127.0.0.1');
      silent.on('error', () => {});
      const half = connect(gw.port, '127.0.0.1');
      half.on('error', () => {});
      // Read what the server sends, so that its close is seen.
      silent.resume();
      half.resume();
      // Listening before anything is awaited: the close may come before the other sockets connect.
      const closed = Promise.all([once(silent, 'close'), once(half, 'close')]);
      await once(half, 'connect');
      half.write(CLIENT_PREFACE.subarray(0, 10)); // a preface begun and never finished
      const spoke = connect(gw.port, '127.0.0.1');
      await once(spoke, 'connect');
      spoke.write(Buffer.concat([CLIENT_PREFACE, settingsFrame([])]));
      await closed;
      assert.ok(Date.now() - t0 < 2000);
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(spoke.destroyed, false, 'a client that sent its preface and SETTINGS is kept');
      spoke.destroy();
    } finally {
      await gw.close(100);
    }
  });
});

suite('the frame server and a bidi client that sends but never reads', () => {
  test("its answers back up, the server stops crediting the stream's window, and credits it once they drain", async () => {
    const ANSWER = Buffer.alloc(64 * 1024, 7);
    const bidi: StreamHandler = (call) => {
      call.onMessage = () => call.write(ANSWER);
    };
    const BIDI = '/test.Echo/Bidi';
    const gw = await listenGrpcFrames(new Map([[BIDI, { stream: bidi }]]), '127.0.0.1', 0, { maxRecvBytes: 1 << 20 });
    const sock = connect(gw.port, '127.0.0.1');
    const f = frames(sock);
    try {
      const block = requestHeaders(BIDI);
      // 512 requests of 8 KiB with their prefix: the 4 MiB the server's SETTINGS let a stream send.
      const req = Buffer.alloc(8192);
      req.writeUInt32BE(8192 - 5, 1);
      const out = [CLIENT_PREFACE, settingsFrame([]), frame(FRAME_HEADERS, FLAG_END_HEADERS, 1, block)];
      for (let i = 0; i < 512; i++) out.push(frame(FRAME_DATA, 0, 1, req));
      // Frames are handled in order: the PING's answer says every request before it was.
      out.push(frame(FRAME_PING, 0, 0, Buffer.from('all-sent')));
      sock.write(Buffer.concat(out));
      await f.until((x) => x.type === FRAME_PING && (x.flags & FLAG_ACK) !== 0);
      const credits = () => f.seen.filter((x) => x.type === FRAME_WINDOW_UPDATE && x.id === 1);
      // The client's default 64 KiB window took the first answer; 511 more (32 MiB) are held.
      assert.equal(credits().length, 0, 'no credit for the stream while 32 MiB of answers wait');

      // The client reads: it opens its windows; everything flows, and the stream is credited again.
      sock.write(Buffer.concat([windowUpdateFrame(0, 2 ** 30), windowUpdateFrame(1, 2 ** 30)]));
      await f.until((x) => x.type === FRAME_WINDOW_UPDATE && x.id === 1);
      assert.equal(credits()[0]!.payload.readUInt32BE(0), 4 * 2 ** 20, 'all that arrived while held');
      sock.write(frame(FRAME_DATA, FLAG_END_STREAM, 1));
      await f.until((x) => x.type === FRAME_HEADERS && x.id === 1 && (x.flags & FLAG_END_STREAM) !== 0);
      const bytes = f.seen.filter((x) => x.type === FRAME_DATA && x.id === 1).reduce((n, x) => n + x.payload.length, 0);
      assert.equal(bytes, 512 * (5 + ANSWER.length), 'every answer arrived');
    } finally {
      sock.destroy();
      await gw.close(100);
    }
  });
});
