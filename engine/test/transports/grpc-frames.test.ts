/**
 * The worker's gRPC port on the HTTP/2 frame layer, spoken to by grpc-js clients in process:
 * every KServe method through the generated client, the health service, errors as their
 * statuses, deadlines, cancellation,
 * message size limits (before and after inflating a compressed request, and on the answer),
 * bidi streaming, TLS with client certificates, a graceful close, and hostile bytes on the
 * socket that cost only their own connection.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, suite, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { Client, credentials, type ChannelCredentials, Metadata, type ServiceError, status } from '@grpc/grpc-js';
import {
  encodeModelInferRequest,
  GRPCInferenceServiceClient,
  HealthCheckResponse_ServingStatus,
  HealthClient,
  ModelInferRequest,
  ModelReadyRequest,
  ModelReadyResponse,
  ModelStreamInferResponse,
} from '@hloserve/proto';
import { startGrpcServer, type GrpcServerHandle } from '../../src/transports/grpc-server.js';
import { loadTlsMaterial } from '../../src/tls/tls-material.js';
import { makeTestCerts } from '../control/test-certs.js';
import { startSurface, type Surface } from './surface.js';

const N = 784;

function request(id = '', model = 'mlp'): ModelInferRequest {
  const x = Float32Array.from({ length: N }, (_, i) => (i % 5) / 5);
  return ModelInferRequest.fromPartial({
    id,
    modelName: model,
    inputs: [{ name: 'x', datatype: 'FP32', shape: [1, N] }],
    rawInputContents: [new Uint8Array(x.buffer)],
  });
}

/** A generated client's unary method as a promise of [error, answer]. */
function call<Req, Res>(
  fn: (req: Req, md: Metadata, opts: { deadline?: number }, cb: (e: ServiceError | null, r: Res) => void) => unknown,
  self: object,
  req: Req,
  deadline?: number,
): Promise<{ err: ServiceError | null; res: Res }> {
  return new Promise((done) =>
    fn.call(self, req, new Metadata(), deadline === undefined ? {} : { deadline }, (err, res) => done({ err, res })),
  );
}

suite('the gRPC port on HTTP/2 frames', () => {
  let s: Surface;
  let g: GRPCInferenceServiceClient;
  let shmFile: string | null = null;

  before(async () => {
    s = await startSurface();
    g = new GRPCInferenceServiceClient(`127.0.0.1:${s.grpc.port}`, credentials.createInsecure());
  });
  after(async () => {
    g.close();
    await s.close();
    if (shmFile) rmSync(shmFile, { force: true });
  });

  test('every KServe method answers through the generated client', async () => {
    assert.equal((await call(g.serverLive, g, {})).res.live, true);
    assert.equal((await call(g.serverReady, g, {})).res.ready, true);
    assert.equal((await call(g.modelReady, g, { name: 'mlp', version: '' })).res.ready, true);
    assert.equal((await call(g.serverMetadata, g, {})).res.name, 'hloserve');
    const md = await call(g.modelMetadata, g, { name: 'mlp', version: '' });
    assert.deepEqual(
      md.res.inputs.map((i) => i.name),
      ['x'],
    );
    const cfg = await call(g.modelConfig, g, { name: 'mlp', version: '' });
    assert.equal(cfg.res.config?.name, 'mlp');
    const index = await call(g.repositoryIndex, g, { repositoryName: '', ready: true });
    assert.ok(index.res.models.some((m) => m.name === 'mlp'));
    const inf = await call(g.modelInfer, g, request('one'));
    assert.equal(inf.err, null, inf.err?.details);
    assert.equal(inf.res.id, 'one');
    assert.deepEqual(inf.res.outputs[0]!.shape, [1, 10]);
    const stats = await call(g.modelStatistics, g, { name: 'mlp', version: '' });
    assert.ok(stats.res.modelStats[0]!.inferenceCount >= 1);
    // System shared memory: a region registered, listed and unregistered.
    const key = `/hlo-frames-${process.pid}`;
    writeFileSync(`/dev/shm${key}`, Buffer.alloc(4096));
    shmFile = `/dev/shm${key}`;
    const reg = await call(g.systemSharedMemoryRegister, g, { name: 'r', key, offset: '0', byteSize: '4096' });
    assert.equal(reg.err, null, reg.err?.details);
    const st = await call(g.systemSharedMemoryStatus, g, { name: '' });
    assert.equal(String(st.res.regions.get('r')?.byteSize), '4096');
    assert.equal((await call(g.systemSharedMemoryUnregister, g, { name: 'r' })).err, null);
    assert.equal((await call(g.cudaSharedMemoryStatus, g, { name: '' })).err, null);
    assert.equal((await call(g.cudaSharedMemoryUnregister, g, { name: '' })).err, null);
    for (const [fn, req] of [
      [g.cudaSharedMemoryRegister, { name: 'c', rawHandle: new Uint8Array(), deviceId: 0, byteSize: '1' }],
      [g.traceSetting, { settings: new Map(), modelName: '' }],
      [g.logSettings, { settings: new Map() }],
    ] as const) {
      const r = await call(fn as never, g, req as never);
      assert.equal(r.err?.code, status.UNIMPLEMENTED);
    }
    // Load and unload reach the worker, which refuses them in static model control mode.
    for (const fn of [g.repositoryModelUnload, g.repositoryModelLoad]) {
      const r = await call(fn as never, g, { repositoryName: '', modelName: 'mlp', parameters: new Map() } as never);
      assert.equal((r.err as ServiceError | null)?.code, status.FAILED_PRECONDITION);
      assert.match((r.err as ServiceError).details, /model_control_mode is static/);
    }
  });

  test('health: Check answers SERVING, Watch UNIMPLEMENTED', async () => {
    const h = new HealthClient(`127.0.0.1:${s.grpc.port}`, credentials.createInsecure());
    try {
      const r = await call(h.check, h, { service: '' });
      assert.equal(r.res.status, HealthCheckResponse_ServingStatus.SERVING);
      const err = await new Promise<ServiceError>((done) => {
        const w = h.watch({ service: '' });
        w.on('error', done);
        w.on('data', () => {});
      });
      assert.equal(err.code, status.UNIMPLEMENTED);
    } finally {
      h.close();
    }
  });

  test('errors: an unknown model is NOT_FOUND, an unknown method UNIMPLEMENTED', async () => {
    const r = await call(g.modelMetadata, g, { name: 'no-such-model', version: '' });
    assert.equal(r.err?.code, status.NOT_FOUND);
    const i = await call(g.modelInfer, g, request('', 'no-such-model'));
    assert.equal(i.err?.code, status.NOT_FOUND);
    const u = await s.call('/inference.GRPCInferenceService/NoSuchMethod', Buffer.alloc(0));
    assert.equal(u.err?.code, status.UNIMPLEMENTED);
  });

  test('a deadline already past is DEADLINE_EXCEEDED; one far enough is served', async () => {
    const past = await call(g.modelInfer, g, request(), Date.now() - 1);
    assert.equal(past.err?.code, status.DEADLINE_EXCEEDED);
    assert.equal((await call(g.modelInfer, g, request(), Date.now() + 60_000)).err, null);
  });

  test('a call the client cancels leaves the server serving', async () => {
    const pending = [];
    for (let k = 0; k < 8; k++) {
      pending.push(
        new Promise<ServiceError | null>((done) => {
          const c = g.modelInfer(request(), (err) => done(err));
          setImmediate(() => c.cancel());
        }),
      );
    }
    for (const e of await Promise.all(pending)) if (e) assert.equal(e.code, status.CANCELLED);
    assert.equal((await call(g.modelInfer, g, request())).err, null);
  });

  test('ModelStreamInfer: answers as they complete, per-request errors, trailers OK at the end', async () => {
    const stream = g.modelStreamInfer();
    const got: ModelStreamInferResponse[] = [];
    const done = new Promise<void>((res, rej) => {
      stream.on('data', (m: ModelStreamInferResponse) => got.push(m));
      stream.on('end', () => res());
      stream.on('error', rej);
    });
    for (let k = 0; k < 5; k++) stream.write(request(`s${k}`));
    stream.write(request('bad', 'no-such-model'));
    stream.end();
    await done;
    assert.equal(got.length, 6);
    assert.deepEqual(
      got
        .filter((m) => m.errorMessage === '')
        .map((m) => m.inferResponse!.id)
        .sort(),
      ['s0', 's1', 's2', 's3', 's4'],
    );
    assert.match(got.find((m) => m.errorMessage !== '')!.errorMessage, /no-such-model/);
  });

  test('hostile bytes on the socket close that connection only', async () => {
    for (const bytes of [
      Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n'),
      Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), Buffer.alloc(64, 0xff)]),
    ]) {
      const sock = connect(s.grpc.port, '127.0.0.1');
      sock.on('error', () => {});
      sock.resume(); // read what the server answers (its GOAWAY), so its close is seen
      sock.write(bytes);
      await new Promise((r) => sock.once('close', r));
    }
    assert.equal((await call(g.modelInfer, g, request())).err, null);
  });
});

suite('the gRPC port on HTTP/2 frames: message size limits', () => {
  let s: Surface;
  before(async () => {
    s = await startSurface({}, { maxRecvMsgBytes: 16_384, maxSendMsgBytes: 16 });
  });
  after(() => s.close());

  test('a request past the receive limit is RESOURCE_EXHAUSTED, before and after inflating', async () => {
    const big = encodeModelInferRequest(
      ModelInferRequest.fromPartial({ ...request(), rawInputContents: [new Uint8Array(32_768)] }),
    );
    const r = await s.unary('ModelInfer', big);
    assert.equal(r.err?.code, status.RESOURCE_EXHAUSTED, r.err?.details);
    // 1 MiB of zeros gzips to about 1 KiB: small on the wire, past the limit once inflated.
    const bomb = Buffer.alloc(1 << 20);
    const gz = gzipSync(bomb);
    const prefix = Buffer.from([1, 0, 0, 0, 0]);
    prefix.writeUInt32BE(gz.length, 1);
    const answer = await rawUnary(
      s.grpc.port,
      '/inference.GRPCInferenceService/ModelInfer',
      Buffer.concat([prefix, gz]),
      'gzip',
    );
    assert.equal(answer, String(status.RESOURCE_EXHAUSTED));
  });

  test('an answer past the send limit is RESOURCE_EXHAUSTED', async () => {
    const r = await s.unary('ModelInfer', encodeModelInferRequest(request()));
    assert.equal(r.err?.code, status.RESOURCE_EXHAUSTED, r.err?.details);
    assert.match(r.err!.details, /Sent message larger than max/);
  });

  test('a compressed request within the limit is inflated and served', async () => {
    const c = new Client(`127.0.0.1:${s.grpc.port}`, credentials.createInsecure(), {
      'grpc.default_compression_algorithm': 2, // gzip
    });
    try {
      const r = await new Promise<{ err: ServiceError | null; res?: Buffer }>((done) =>
        c.makeUnaryRequest(
          '/inference.GRPCInferenceService/ModelReady',
          (b: Buffer) => b,
          (b: Buffer) => b,
          Buffer.from(ModelReadyRequest.encode({ name: 'mlp', version: '' }).finish()),
          (err, res) => done({ err, res }),
        ),
      );
      assert.equal(r.err, null, r.err?.details);
      assert.equal(ModelReadyResponse.decode(r.res!).ready, true);
    } finally {
      c.close();
    }
  });
});

/**
 * One unary call on a raw HTTP/2 connection made by node:http2 (for what grpc-js will not send: a
 * compressed body we built); resolves with the grpc-status.
 */
async function rawUnary(port: number, path: string, body: Buffer, encoding: string): Promise<string> {
  const { connect: h2connect } = await import('node:http2');
  const session = h2connect(`http://127.0.0.1:${port}`);
  try {
    return await new Promise<string>((resolve, reject) => {
      const req = session.request({
        ':method': 'POST',
        ':path': path,
        'content-type': 'application/grpc',
        te: 'trailers',
        'grpc-encoding': encoding,
      });
      let headStatus: string | undefined;
      req.on('response', (h) => (headStatus = h['grpc-status'] as string | undefined));
      req.on('trailers', (t) => resolve(String(t['grpc-status'])));
      req.on('end', () => headStatus !== undefined && resolve(headStatus));
      req.on('error', reject);
      req.resume();
      req.end(body);
    });
  } finally {
    session.close();
  }
}

suite('the gRPC port on HTTP/2 frames: TLS with client certificates, and a graceful close', () => {
  let s: Surface;
  let dir: string;
  let tlsPort: GrpcServerHandle;
  let certs: ReturnType<typeof makeTestCerts>;
  before(async () => {
    s = await startSurface();
    dir = mkdtempSync(join(tmpdir(), 'hlo-frames-tls-'));
    certs = makeTestCerts(dir);
    const material = loadTlsMaterial({
      certFile: certs.serverCert,
      keyFile: certs.serverKey,
      clientCaFile: certs.caCert,
    });
    tlsPort = await startGrpcServer(s.worker, '127.0.0.1', 0, undefined, material);
  });
  after(async () => {
    await tlsPort.close(1000);
    await s.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const live = async (creds: ChannelCredentials) => {
    const c = new GRPCInferenceServiceClient(`localhost:${tlsPort.port}`, creds);
    try {
      return await call(c.serverLive, c, {}, Date.now() + 5000);
    } finally {
      c.close();
    }
  };

  test('a client with a certificate the CA signed is served; without one, or in plaintext, refused', async () => {
    const { readFileSync } = await import('node:fs');
    const ca = readFileSync(certs.caCert);
    const ok = await live(credentials.createSsl(ca, readFileSync(certs.clientKey), readFileSync(certs.clientCert)));
    assert.equal(ok.err, null, ok.err?.details);
    assert.equal(ok.res.live, true);
    assert.equal((await live(credentials.createSsl(ca))).err?.code, status.UNAVAILABLE);
    assert.equal((await live(credentials.createInsecure())).err?.code, status.UNAVAILABLE);
  });

  test('close: a stream in flight finishes, new calls are refused, close resolves', async () => {
    const port = await startGrpcServer(s.worker, '127.0.0.1', 0);
    const c = new GRPCInferenceServiceClient(`127.0.0.1:${port.port}`, credentials.createInsecure());
    try {
      const stream = c.modelStreamInfer();
      const got: ModelStreamInferResponse[] = [];
      const done = new Promise<void>((res, rej) => {
        stream.on('data', (m: ModelStreamInferResponse) => got.push(m));
        stream.on('end', () => res());
        stream.on('error', rej);
      });
      stream.write(request('before'));
      await new Promise<void>((r) => {
        const t = setInterval(() => {
          if (got.length > 0) {
            clearInterval(t);
            r();
          }
        }, 5);
      });
      const closed = port.close(10_000);
      stream.write(request('during'));
      stream.end();
      await done;
      assert.deepEqual(
        got.map((m) => m.inferResponse?.id),
        ['before', 'during'],
      );
      await closed;
      const after = await call(c.serverLive, c, {}, Date.now() + 2000);
      assert.notEqual(after.err, null);
    } finally {
      c.close();
      await port.close(0);
    }
  });
});
