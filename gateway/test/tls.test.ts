/**
 * The gateway's listeners on TLS (one self-signed certificate from openssl): gRPC with ALPN h2,
 * HTTP, metrics and the console port (the settings answer rewritten to describe this listener, a
 * WebSocket upgrade passed through) in front of a stand-in worker reached in plaintext; plaintext
 * clients refused; client certificates required when a client CA is given; a key that does not
 * match the certificate refused naming the file. Real workers: e2e/test/gateway-tls.test.ts.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, get as httpGet, type Server as HttpServer } from 'node:http';
import { get as httpsGet, type RequestOptions } from 'node:https';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { connect as tlsConnect } from 'node:tls';
import { after, before, suite, test } from 'node:test';
import {
  credentials,
  Metadata,
  Server,
  ServerCredentials,
  type ServerUnaryCall,
  type sendUnaryData,
  status as Status,
} from '@grpc/grpc-js';
import {
  GRPCInferenceService,
  GRPCInferenceServiceClient,
  ModelInferRequest,
  ModelInferResponse,
  RepositoryIndexResponse,
  ServerReadyResponse,
} from '@hloserve/proto';
import { selfSignedCertificate } from '@hloserve/common/testing/self-signed';
import { gatewayTlsFromFiles, serveGateway, type RunningGateway } from '@hloserve/gateway';

/** A worker's KServe gRPC (ready, one model, infer answers with its id) and a console port. */
async function standInWorker(): Promise<{ grpc: Server; grpcPort: number; console: HttpServer; consolePort: number }> {
  const grpc = new Server();
  const raw = (b: Buffer) => b;
  const def = Object.fromEntries(
    Object.entries(GRPCInferenceService).map(([k, m]) => [
      k,
      { ...m, requestDeserialize: raw, responseSerialize: raw },
    ]),
  );
  const enc = (b: Uint8Array) => Buffer.from(b);
  grpc.addService(def as unknown as typeof GRPCInferenceService, {
    serverReady: (_c: unknown, cb: sendUnaryData<Buffer>) =>
      cb(null, enc(ServerReadyResponse.encode({ ready: true }).finish())),
    repositoryIndex: (_c: unknown, cb: sendUnaryData<Buffer>) =>
      cb(
        null,
        enc(
          RepositoryIndexResponse.encode({
            models: [{ name: 'm', version: '1', state: 'READY', reason: '' }],
          }).finish(),
        ),
      ),
    modelStatistics: (_c: unknown, cb: sendUnaryData<Buffer>) => cb(null, Buffer.alloc(0)),
    modelInfer: (call: ServerUnaryCall<Buffer, Buffer>, cb: sendUnaryData<Buffer>) => {
      const req = ModelInferRequest.decode(call.request);
      cb(
        null,
        enc(ModelInferResponse.encode(ModelInferResponse.fromPartial({ modelName: 'm', id: `w:${req.id}` })).finish()),
      );
    },
  });
  const grpcPort = await new Promise<number>((resolve, reject) =>
    grpc.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
  );
  const console = createServer((req, res) => {
    if (req.url === '/api/v1/settings') {
      const tls = { enabled: false, certFile: null, subject: null, validTo: null, clientCertificates: false };
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ data: { stateStore: 'sqlite', tls } }));
    } else res.writeHead(404).end();
  });
  // The live feed's stand-in: accepts the upgrade, then echoes what it gets.
  console.on('upgrade', (_req, socket) => {
    socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n');
    socket.pipe(socket);
  });
  const consolePort = await new Promise<number>((r) =>
    console.listen(0, '127.0.0.1', () => r((console.address() as { port: number }).port)),
  );
  return { grpc, grpcPort, console, consolePort };
}

interface InferClient {
  modelInfer(
    req: ModelInferRequest,
    md: Metadata,
    cb: (err: { code: number; details: string } | null, res?: ModelInferResponse) => void,
  ): void;
  close(): void;
}

const getBody = (url: string, opts: RequestOptions) =>
  new Promise<{ status: number; body: string }>((resolve, reject) =>
    httpsGet(url, opts, (r) => {
      let body = '';
      r.setEncoding('utf8');
      r.on('data', (c: string) => (body += c));
      r.on('end', () => resolve({ status: r.statusCode ?? 0, body }));
    }).on('error', reject),
  );

suite('the gateway serves TLS on every listener', () => {
  let dir: string;
  let worker: Awaited<ReturnType<typeof standInWorker>>;
  let gw: RunningGateway;
  let ca: Buffer;

  const start = (clientCa: string | null) =>
    serveGateway(
      {
        workers: [
          {
            name: 'w',
            address: {
              grpc: `127.0.0.1:${worker.grpcPort}`,
              http: '127.0.0.1:1',
              metrics: null,
              console: `127.0.0.1:${worker.consolePort}`,
            },
          },
        ],
        mode: 'round_robin',
        healthIntervalMs: 60_000,
      },
      {
        host: '127.0.0.1',
        grpcPort: 0,
        httpPort: 0,
        metricsPort: 0,
        consolePort: 0,
        tls: gatewayTlsFromFiles(join(dir, 'server.crt'), join(dir, 'server.key'), clientCa),
      },
    );

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'hloserve-gateway-tls-'));
    for (const n of ['server', 'other', 'client']) selfSignedCertificate(dir, n, n === 'client' ? n : 'localhost');
    ca = readFileSync(join(dir, 'server.crt'));
    worker = await standInWorker();
    gw = await start(null);
  });
  after(async () => {
    await gw?.stop();
    worker?.grpc.forceShutdown();
    worker?.console.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('gRPC over TLS (ALPN h2) reaches the plaintext worker; a plaintext client is refused', async () => {
    const call = (creds: ReturnType<typeof credentials.createSsl>) => {
      const c = new GRPCInferenceServiceClient(`127.0.0.1:${gw.ports.grpc}`, creds) as unknown as InferClient;
      const md = new Metadata();
      return new Promise<{ id?: string; code?: number }>((resolve) =>
        c.modelInfer(
          ModelInferRequest.fromPartial({ modelName: 'm', id: 'r1', inputs: [] }),
          md,
          (err, res) => (c.close(), resolve(err ? { code: err.code } : { id: res!.id })),
        ),
      );
    };
    assert.deepEqual(await call(credentials.createSsl(ca)), { id: 'w:r1' });
    assert.equal((await call(credentials.createInsecure())).code, Status.UNAVAILABLE);
  });

  test('HTTP and metrics answer over https only', async () => {
    assert.equal((await getBody(`https://127.0.0.1:${gw.ports.http}/v2/health/live`, { ca })).status, 200);
    const m = await getBody(`https://127.0.0.1:${gw.ports.metrics}/metrics`, { ca });
    assert.equal(m.status, 200);
    assert.match(m.body, /hloserve_gateway_/);
    // Plaintext to a TLS port: the server drops it (no HTTP answer).
    await assert.rejects(
      new Promise((resolve, reject) =>
        httpGet(`http://127.0.0.1:${gw.ports.metrics}/metrics`, resolve).on('error', reject),
      ),
    );
    // A client that does not trust the certificate refuses it.
    await assert.rejects(getBody(`https://127.0.0.1:${gw.ports.metrics}/metrics`, {}), /self[- ]signed/);
  });

  test("the console's settings describe the gateway's listener, not the worker's", async () => {
    const r = await getBody(`https://127.0.0.1:${gw.ports.console}/api/v1/settings`, { ca });
    assert.equal(r.status, 200);
    const data = (JSON.parse(r.body) as { data: { stateStore: string; tls: Record<string, unknown> } }).data;
    assert.equal(data.stateStore, 'sqlite', "the worker's other settings pass through");
    assert.deepEqual(data.tls, {
      enabled: true,
      certFile: join(dir, 'server.crt'),
      subject: 'CN=localhost',
      validTo: data.tls['validTo'],
      clientCertificates: false,
    });
    assert.ok(Date.parse(String(data.tls['validTo'])) > Date.now());
  });

  test('a WebSocket upgrade over TLS passes through to the worker', async () => {
    const sock = tlsConnect({ host: '127.0.0.1', port: gw.ports.console, ca, servername: 'localhost' });
    let got = '';
    sock.setEncoding('utf8');
    sock.on('data', (c: string) => (got += c));
    await new Promise<void>((r) => sock.once('secureConnect', () => r()));
    sock.write(
      'GET /api/v1/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
        'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
    );
    while (!got.includes('\r\n\r\n')) await new Promise((r) => setTimeout(r, 10));
    assert.match(got, /^HTTP\/1\.1 101/);
    sock.write('ping');
    while (!got.endsWith('ping')) await new Promise((r) => setTimeout(r, 10));
    sock.destroy();
  });

  test('with a client CA, a client without a certificate it signed is refused', async () => {
    const strict = await start(join(dir, 'client.crt'));
    try {
      const url = `https://127.0.0.1:${strict.ports.metrics}/metrics`;
      const cert = readFileSync(join(dir, 'client.crt'));
      const key = readFileSync(join(dir, 'client.key'));
      assert.equal((await getBody(url, { ca, cert, key })).status, 200);
      await assert.rejects(getBody(url, { ca }));
      const other = { cert: readFileSync(join(dir, 'other.crt')), key: readFileSync(join(dir, 'other.key')) };
      await assert.rejects(getBody(url, { ca, ...other }));
      const r = await getBody(`https://127.0.0.1:${strict.ports.console}/api/v1/settings`, { ca, cert, key });
      assert.equal(
        (JSON.parse(r.body) as { data: { tls: { clientCertificates: boolean } } }).data.tls.clientCertificates,
        true,
      );
    } finally {
      await strict.stop();
    }
  });

  test('a key that does not match the certificate is refused naming the file', () => {
    assert.throws(
      () => gatewayTlsFromFiles(join(dir, 'server.crt'), join(dir, 'other.key'), null),
      (e: Error) =>
        e.message ===
        `--tls-key ${join(dir, 'other.key')}: does not match the certificate in ${join(dir, 'server.crt')}`,
    );
  });

  test('the standalone CLI serves TLS from --tls-cert/--tls-key and refuses a bad pair', async () => {
    const cli = join(dirname(fileURLToPath(import.meta.url)), '..', 'src', 'cli.js');
    const spec = `w=127.0.0.1:${worker.grpcPort},127.0.0.1:1`;
    const flags = [
      '--worker',
      spec,
      '--grpc-port',
      '0',
      '--http-port',
      '0',
      '--metrics-port',
      '0',
      '--console-port=-1',
    ];
    const bad = spawnSync(
      process.execPath,
      [cli, ...flags, '--tls-cert', join(dir, 'server.crt'), '--tls-key', join(dir, 'other.key')],
      {
        encoding: 'utf8',
      },
    );
    assert.equal(bad.status, 1);
    assert.match(bad.stderr, /--tls-key .*other\.key: does not match the certificate/);
    const half = spawnSync(process.execPath, [cli, ...flags, '--tls-cert', join(dir, 'server.crt')], {
      encoding: 'utf8',
    });
    assert.equal(half.status, 1);
    assert.match(half.stderr, /--tls-cert and --tls-key go together/);

    const child = spawn(
      process.execPath,
      [cli, ...flags, '--tls-cert', join(dir, 'server.crt'), '--tls-key', join(dir, 'server.key')],
      {
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    try {
      const rec = await new Promise<{ tls: boolean; http: number }>((resolve, reject) => {
        createInterface({ input: child.stderr! }).on('line', (l) => {
          const r = JSON.parse(l) as { msg: string; tls: boolean; http: number };
          if (r.msg === 'listening') resolve(r);
        });
        child.once('exit', (code) => reject(new Error(`gateway exited ${code}`)));
      });
      assert.equal(rec.tls, true);
      assert.equal((await getBody(`https://127.0.0.1:${rec.http}/v2/health/live`, { ca })).status, 200);
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  });
});
