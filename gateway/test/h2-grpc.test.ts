/**
 * The frame-level gRPC server and worker channel end to end with real grpc-js on both sides:
 * a grpc-js client calls listenGrpcFrames, whose handler forwards through a WorkerChannel to a
 * grpc-js server standing in for a worker. Status, deadline, cancellation and a 16 MB message
 * both ways (flow control on both hops) cross intact; bad bytes on one connection close only
 * that connection.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { after, before, suite, test } from 'node:test';
import {
  Client,
  credentials,
  Metadata,
  Server,
  ServerCredentials,
  type ServerUnaryCall,
  type sendUnaryData,
  type ServiceError,
} from '@grpc/grpc-js';
import {
  CLIENT_PREFACE,
  ERR_COMPRESSION,
  ERR_FRAME_SIZE,
  ERR_PROTOCOL,
  FLAG_END_HEADERS,
  FRAME_GOAWAY,
  FRAME_HEADERS,
  frame,
  FrameReader,
  settingsFrame,
  writeFrameHeader,
} from '@hloserve/common/h2/frame/frame-codec';
import { type FrameServerHandle, listenGrpcFrames } from '@hloserve/common/h2/frame-server';
import { WorkerChannel } from '../src/h2/worker-channel.js';

const PATH = '/test.Echo/Unary';
const raw = (b: Buffer) => b;

interface Worker {
  server: Server;
  port: number;
  lastDeadlineMs: number | null;
  lastToken: string | null;
  received: Promise<void>;
  cancelled: Promise<void>;
  arm(): void;
}

async function worker(): Promise<Worker> {
  const server = new Server({ 'grpc.max_receive_message_length': -1, 'grpc.max_send_message_length': -1 });
  const w: Worker = {
    server,
    port: 0,
    lastDeadlineMs: null,
    lastToken: null,
    received: Promise.resolve(),
    cancelled: Promise.resolve(),
    arm() {
      w.received = new Promise((r) => (onReceived = r));
      w.cancelled = new Promise((r) => (onCancelled = r));
    },
  };
  let onReceived = () => {};
  let onCancelled = () => {};
  server.addService(
    {
      unary: {
        path: PATH,
        requestStream: false,
        responseStream: false,
        requestSerialize: raw,
        requestDeserialize: raw,
        responseSerialize: raw,
        responseDeserialize: raw,
      },
    },
    {
      unary: (call: ServerUnaryCall<Buffer, Buffer>, cb: sendUnaryData<Buffer>) => {
        const dl = call.getDeadline();
        w.lastDeadlineMs = Number.isFinite(+dl) ? +dl - Date.now() : null;
        w.lastToken = (call.metadata.get('authorization')[0] as string | undefined) ?? null;
        onReceived();
        const what = call.request.subarray(0, 4).toString();
        if (what === 'fail') return cb({ code: 9, details: 'café at 100% (precondition)' });
        if (what === 'hang') {
          call.on('cancelled', () => onCancelled());
          return;
        }
        cb(null, call.request);
      },
    },
  );
  w.port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
  );
  return w;
}

/** Reads frames from a raw socket until it closes; returns the GOAWAY codes seen. */
async function goawayCodes(sock: Socket): Promise<number[]> {
  const codes: number[] = [];
  const r = new FrameReader((t, _f, _id, p) => {
    if (t === FRAME_GOAWAY) codes.push(p.readUInt32BE(4));
  }, 1 << 24);
  sock.on('data', (c: Buffer) => r.push(c));
  sock.on('error', () => {});
  await once(sock, 'close');
  return codes;
}

suite('gRPC over HTTP/2 frames: grpc-js client -> frame server -> frame channel -> grpc-js worker', () => {
  let w: Worker;
  let gw: FrameServerHandle;
  let channel: WorkerChannel;
  let client: Client;
  const call = (body: Buffer, opts: { deadlineMs?: number; md?: Metadata } = {}) => {
    let handle: { cancel(): void } | undefined;
    const p = new Promise<{ err: ServiceError | null; res?: Buffer }>((resolve) => {
      handle = client.makeUnaryRequest(
        PATH,
        raw,
        raw,
        body,
        opts.md ?? new Metadata(),
        opts.deadlineMs ? { deadline: new Date(Date.now() + opts.deadlineMs) } : {},
        (err, res) => resolve({ err, res }),
      );
    });
    return { done: p, cancel: () => handle!.cancel() };
  };

  before(async () => {
    w = await worker();
    channel = new WorkerChannel(`127.0.0.1:${w.port}`, 32 * 2 ** 20);
    gw = await listenGrpcFrames(
      new Map([[PATH, (c) => channel.call(PATH, c.request, c.deadlineMs, c.metadata, c.onCancel.bind(c), false)]]),
      '127.0.0.1',
      0,
      { maxRecvBytes: 32 * 2 ** 20 },
    );
    client = new Client(`127.0.0.1:${gw.port}`, credentials.createInsecure(), {
      'grpc.max_receive_message_length': -1,
      'grpc.max_send_message_length': -1,
    });
  });

  after(async () => {
    client.close();
    channel.close();
    await gw.close(100);
    w.server.forceShutdown();
  });

  test('a unary call comes back unchanged, metadata forwarded', async () => {
    const md = new Metadata();
    md.set('authorization', 'Bearer t0k');
    const { err, res } = await call(Buffer.from('hello frames'), { md }).done;
    assert.equal(err, null);
    assert.equal(res!.toString(), 'hello frames');
    assert.equal(w.lastToken, 'Bearer t0k');
  });

  test("the worker's error status and message reach the client as they were", async () => {
    const { err } = await call(Buffer.from('fail')).done;
    assert.equal(err?.code, 9);
    assert.equal(err?.details, 'café at 100% (precondition)');
  });

  test('the deadline reaches the worker to the millisecond', async () => {
    const { err } = await call(Buffer.from('ok'), { deadlineMs: 1234 }).done;
    assert.equal(err, null);
    assert.ok(w.lastDeadlineMs !== null && w.lastDeadlineMs <= 1234 && w.lastDeadlineMs > 1000, `${w.lastDeadlineMs}`);
  });

  test("the client's cancel reaches the worker", async () => {
    w.arm();
    const c = call(Buffer.from('hang'));
    await w.received;
    c.cancel();
    const { err } = await c.done;
    assert.equal(err?.code, 1);
    await w.cancelled;
  });

  test('a 16 MB message crosses both hops both ways (flow control)', async () => {
    const big = Buffer.alloc(16 * 2 ** 20);
    for (let i = 0; i < big.length; i += 4096) big[i] = i & 0xff;
    big.write('big!', 0);
    const { err, res } = await call(big).done;
    assert.equal(err, null);
    assert.equal(res!.length, big.length);
    assert.ok(res!.equals(big));
  });

  test('garbage, an oversized frame or a broken HPACK block closes only that connection', async () => {
    const port = gw.port;
    // A call in flight on the client's connection while the bad ones arrive.
    w.arm();
    const inFlight = call(Buffer.from('hang'));
    await w.received;

    const garbage = connect(port, '127.0.0.1');
    garbage.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    assert.deepEqual(await goawayCodes(garbage), [ERR_PROTOCOL]);

    const oversized = connect(port, '127.0.0.1');
    const head = Buffer.alloc(9);
    writeFrameHeader(head, 0, (1 << 20) + 1, 0, 0, 1);
    oversized.write(Buffer.concat([CLIENT_PREFACE, settingsFrame([]), head]));
    assert.deepEqual(await goawayCodes(oversized), [ERR_FRAME_SIZE]);

    const badHpack = connect(port, '127.0.0.1');
    badHpack.write(
      Buffer.concat([
        CLIENT_PREFACE,
        settingsFrame([]),
        frame(FRAME_HEADERS, FLAG_END_HEADERS, 1, Buffer.from([0xbe, 0x40, 0x7f])),
      ]),
    );
    assert.deepEqual(await goawayCodes(badHpack), [ERR_COMPRESSION]);

    const { err, res } = await call(Buffer.from('still here')).done;
    assert.equal(err, null);
    assert.equal(res!.toString(), 'still here');
    inFlight.cancel();
    await inFlight.done;
  });
});
