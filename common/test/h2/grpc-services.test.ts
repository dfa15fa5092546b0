/**
 * GrpcServices on the frame server, spoken to by grpc-js clients: a service definition's unary
 * and bidi methods, a handler's ServeError as its status, bytes that do not decode as
 * INVALID_ARGUMENT (per call, and per message on a stream that lives on), a method left out as
 * UNIMPLEMENTED, the server's own deadline timer (answers on time and cancels the handler), a
 * client's cancel reaching the handler, grpc-timeout clamped and checked, stream size limits.
 */
import assert from 'node:assert/strict';
import { connect as h2connect } from 'node:http2';
import { after, before, suite, test } from 'node:test';
import { Client, credentials, Metadata, type ServiceError, status } from '@grpc/grpc-js';
import { ServeError } from '../../src/errors.js';
import { type FrameServerHandle, listenGrpcFrames } from '../../src/h2/frame-server.js';
import {
  type CallContext,
  GrpcServices,
  MalformedMessage,
  type MessageStream,
  type ServiceDefinition,
} from '../../src/h2/grpc-services.js';

/** Messages are JSON objects; a body that is not JSON does not decode. */
const json = {
  requestDeserialize: (b: Buffer) => JSON.parse(b.toString('utf8')) as unknown,
  responseSerialize: (v: unknown) => Buffer.from(JSON.stringify(v)),
};
const definition: ServiceDefinition = {
  echo: { path: '/t.S/Echo', requestStream: false, responseStream: false, ...json },
  fail: { path: '/t.S/Fail', requestStream: false, responseStream: false, ...json },
  hang: { path: '/t.S/Hang', requestStream: false, responseStream: false, ...json },
  missing: { path: '/t.S/Missing', requestStream: false, responseStream: false, ...json },
  chat: { path: '/t.S/Chat', requestStream: true, responseStream: true, ...json },
};

suite('gRPC services on HTTP/2 frames', () => {
  let server: FrameServerHandle;
  let client: Client;
  const cancelled: string[] = [];
  const seen: { deadlineMs: number | null }[] = [];

  before(async () => {
    const services = new GrpcServices('the test server');
    services.addService(definition, {
      echo: (req: unknown, call: CallContext) => {
        seen.push({ deadlineMs: call.deadlineMs });
        return { echo: req, trace: call.metadata['x-trace'] ?? null };
      },
      fail: () => {
        throw new ServeError('HLO_ERR_MODEL_NOT_FOUND', 'no such thing');
      },
      hang: (req: { tag: string }, call: CallContext) =>
        new Promise((resolve) => {
          call.onCancel(() => {
            cancelled.push(req.tag);
            resolve({});
          });
        }),
      chat: (stream: MessageStream<{ n: number } | MalformedMessage>) => {
        stream.onMessage = (m) =>
          stream.write(
            m instanceof MalformedMessage ? { error: m.error.message } : { twice: (m as { n: number }).n * 2 },
          );
      },
    });
    server = await listenGrpcFrames(services.methods, '127.0.0.1', 0, { maxRecvBytes: 1024, deadlineTimers: true });
    client = new Client(`127.0.0.1:${server.port}`, credentials.createInsecure());
  });
  after(async () => {
    client.close();
    await server.close(1000);
  });

  const unary = (path: string, body: Buffer, md = new Metadata(), deadline?: number) =>
    new Promise<{ err: ServiceError | null; res?: Buffer }>((done) =>
      client.makeUnaryRequest(
        path,
        (b: Buffer) => b,
        (b: Buffer) => b,
        body,
        md,
        deadline === undefined ? {} : { deadline },
        (err, res) => done({ err, res }),
      ),
    );
  const j = (v: unknown) => Buffer.from(JSON.stringify(v));

  test('a unary method decodes, answers, and sees the metadata; errors map through the catalogue', async () => {
    const md = new Metadata();
    md.set('x-trace', 'abc');
    const r = await unary('/t.S/Echo', j({ a: 1 }), md);
    assert.equal(r.err, null);
    assert.deepEqual(JSON.parse(r.res!.toString()), { echo: { a: 1 }, trace: 'abc' });
    assert.equal((await unary('/t.S/Fail', j({}))).err?.code, status.NOT_FOUND);
    const bad = await unary('/t.S/Echo', Buffer.from('{not json'));
    assert.equal(bad.err?.code, status.INVALID_ARGUMENT);
    assert.match(bad.err!.details, /not a valid echo request/);
    assert.equal((await unary('/t.S/Missing', j({}))).err?.code, status.UNIMPLEMENTED);
    assert.equal((await unary('/t.S/Nowhere', j({}))).err?.code, status.UNIMPLEMENTED);
  });

  test("the server's deadline timer answers DEADLINE_EXCEEDED on time and cancels the handler", async () => {
    // node:http2 as the client: it keeps no deadline of its own, so the answer is the server's.
    const t0 = Date.now();
    const code = await rawCall(server.port, '/t.S/Hang', j({ tag: 'deadline' }), { 'grpc-timeout': '100m' });
    assert.equal(code, String(status.DEADLINE_EXCEEDED));
    assert.ok(Date.now() - t0 < 1000, `${Date.now() - t0} ms`);
    assert.ok(cancelled.includes('deadline'));
  });

  test("a client's cancel reaches the handler", async () => {
    const c = client.makeUnaryRequest(
      '/t.S/Hang',
      (b: Buffer) => b,
      (b: Buffer) => b,
      j({ tag: 'cancel' }),
      () => {},
    );
    await new Promise((r) => setTimeout(r, 50));
    c.cancel();
    for (let i = 0; i < 100 && !cancelled.includes('cancel'); i++) await new Promise((r) => setTimeout(r, 10));
    assert.ok(cancelled.includes('cancel'));
  });

  test('grpc-timeout: past a timer ~24.8 days is no deadline; malformed is INTERNAL', async () => {
    seen.length = 0;
    assert.equal((await unary('/t.S/Echo', j({}), new Metadata(), Date.now() + 30 * 86_400_000)).err, null);
    assert.equal(seen[0]!.deadlineMs, null);
    assert.equal((await unary('/t.S/Echo', j({}), new Metadata(), Date.now() + 60_000)).err, null);
    assert.ok(seen[1]!.deadlineMs !== null && seen[1]!.deadlineMs > Date.now());
    assert.equal(await rawCall(server.port, '/t.S/Echo', j({}), { 'grpc-timeout': 'soon' }), String(status.INTERNAL));
  });

  test('a bidi stream answers each message; a malformed one answers its own error; one past the limit ends it', async () => {
    const chat = () =>
      client.makeBidiStreamRequest(
        '/t.S/Chat',
        (b: Buffer) => b,
        (b: Buffer) => JSON.parse(b.toString()) as unknown,
        new Metadata(),
      );
    const s = chat();
    const got: unknown[] = [];
    const ended = new Promise<void>((res, rej) => {
      s.on('data', (m: unknown) => got.push(m));
      s.on('end', () => res());
      s.on('error', rej);
    });
    s.write(j({ n: 1 }));
    s.write(Buffer.from('nope'));
    s.write(j({ n: 21 }));
    s.end();
    await ended;
    assert.equal(got.length, 3);
    assert.deepEqual(got[0], { twice: 2 });
    assert.match((got[1] as { error: string }).error, /not a valid chat request/);
    assert.deepEqual(got[2], { twice: 42 });

    const big = chat();
    const err = await new Promise<ServiceError>((resolve) => {
      big.on('error', resolve);
      big.on('data', () => {});
      big.write(j({ n: 1, pad: 'x'.repeat(4096) }));
    });
    assert.equal(err.code, status.RESOURCE_EXHAUSTED);
  });
});

suite('gRPC services on HTTP/2 frames: the largest message limit', () => {
  test('a 2^31-1 byte limit still advertises a valid connection window, and calls are served', async () => {
    const services = new GrpcServices();
    services.addService(definition, { echo: (req: unknown) => req });
    const server = await listenGrpcFrames(services.methods, '127.0.0.1', 0, { maxRecvBytes: 2 ** 31 - 1 });
    const client = new Client(`127.0.0.1:${server.port}`, credentials.createInsecure());
    try {
      const r = await new Promise<{ err: ServiceError | null; res?: Buffer }>((done) =>
        client.makeUnaryRequest(
          '/t.S/Echo',
          (b: Buffer) => b,
          (b: Buffer) => b,
          Buffer.from('{"a":1}'),
          (err, res) => done({ err, res }),
        ),
      );
      assert.equal(r.err, null, r.err?.details);
      assert.equal(r.res!.toString(), '{"a":1}');
    } finally {
      client.close();
      await server.close(1000);
    }
  });
});

/** One unary call on node:http2 with extra request headers; resolves with its grpc-status. */
async function rawCall(port: number, path: string, message: Buffer, headers: Record<string, string>): Promise<string> {
  const session = h2connect(`http://127.0.0.1:${port}`);
  try {
    return await new Promise<string>((resolve, reject) => {
      const req = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', ...headers });
      req.on('response', (h) => h['grpc-status'] !== undefined && resolve(String(h['grpc-status'])));
      req.on('trailers', (t) => resolve(String(t['grpc-status'])));
      req.on('error', reject);
      req.resume();
      const prefix = Buffer.from([0, 0, 0, 0, 0]);
      prefix.writeUInt32BE(message.length, 1);
      req.end(Buffer.concat([prefix, message]));
    });
  } finally {
    session.close();
  }
}
