/**
 * TLS on every listener of a real worker (the CPU plugin, the example mlp): gRPC (grpc-js and
 * tritonclient), HTTP (node:https and tritonclient), metrics, the console's REST API and its
 * WebSocket over wss; plaintext refused on each; bad files stop the start naming the file.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import { request as httpRequest } from 'node:http';
import { join, resolve } from 'node:path';
import { after, before, suite, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Client, credentials, Metadata, type ServiceError } from '@grpc/grpc-js';
import { ServeError } from '@hloserve/common/errors';
import { WebSocket } from 'ws';
import type { WorkerSettings } from '../../src/config/types.js';
import { defaultConfig } from '../../src/config/node-config.js';
import { startMetricsServer } from '../../src/transports/metrics-server.js';
import { gatewayTlsFor, settingsBehindGateway } from '../../src/supervisor/gateway-tls.js';
import { runSupervisor } from '../../src/supervisor/run.js';
import { type RunningServer, serve } from '../../src/serve.js';
import { loadTlsMaterial } from '../../src/tls/tls-material.js';
import type { Worker } from '../../src/worker/worker.js';
import { examples, log, mlpSettings, tempDir } from './harness.js';
import { makeTestCerts, type TestCerts } from './test-certs.js';

const pythonDir = resolve(fileURLToPath(import.meta.url), '..', '..', '..', '..', '..', 'e2e', 'python');

interface Answer {
  status: number;
  body: string;
}

function get(url: string, o: RequestOptions = {}): Promise<Answer> {
  return new Promise((done, fail) => {
    const req = (url.startsWith('https:') ? httpsRequest : httpRequest)(url, { timeout: 5000, ...o }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => done({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', fail);
    req.end(o.method === 'POST' ? (o as { body?: string }).body : undefined);
  });
}

function grpcLive(port: number, creds: ReturnType<typeof credentials.createInsecure>): Promise<ServiceError | Buffer> {
  const client = new Client(`127.0.0.1:${port}`, creds);
  return new Promise((done) =>
    client.makeUnaryRequest(
      '/inference.GRPCInferenceService/ServerLive',
      (b: Buffer) => b,
      (b: Buffer) => b,
      Buffer.alloc(0),
      new Metadata(),
      { deadline: Date.now() + 5000 },
      (err, res) => {
        client.close();
        done(err ?? res!);
      },
    ),
  );
}

function tlsSettings(dir: string, certs: TestCerts, clientCa: string | null = null): WorkerSettings {
  const s = mlpSettings();
  return {
    ...s,
    cacheDir: join(dir, 'cache'),
    endpoints: {
      ...s.endpoints,
      grpcPort: 0,
      httpPort: 0,
      metricsPort: 0,
      consolePort: 0,
      tls: { certFile: certs.serverCert, keyFile: certs.serverKey, clientCaFile: clientCa },
    },
  };
}

suite('TLS on every listener', () => {
  let dir: string;
  let certs: TestCerts;
  let ca: Buffer;
  let server: RunningServer;
  let admin: string;

  before(async () => {
    dir = tempDir();
    certs = makeTestCerts(dir);
    ca = readFileSync(certs.caCert);
    server = await serve(examples, tlsSettings(dir, certs), log);
    const setupToken = readFileSync(join(dir, 'cache', 'console-setup-token'), 'utf8').trim();
    const res = await get(`https://127.0.0.1:${server.ports.console}/api/v1/setup`, {
      ca,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ setupToken }),
    } as RequestOptions);
    assert.equal(res.status, 201, res.body);
    admin = (JSON.parse(res.body) as { data: { token: string } }).data.token;
  });
  after(async () => {
    await server?.stop(false);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('gRPC: a TLS client that trusts the CA is served, a plaintext one is refused', async () => {
    const live = await grpcLive(server.ports.grpc, credentials.createSsl(ca));
    assert.ok(Buffer.isBuffer(live), String(live));
    assert.deepEqual([...live], [0x08, 0x01], 'ServerLiveResponse{live: true}');
    const plain = await grpcLive(server.ports.grpc, credentials.createInsecure());
    assert.ok(!Buffer.isBuffer(plain));
    assert.equal(plain.code, 14, 'UNAVAILABLE: the handshake fails');
  });

  test('HTTP, metrics and the console answer over https only', async () => {
    const { http, metrics, console: consolePort } = server.ports;
    assert.equal((await get(`https://127.0.0.1:${http}/v2/health/ready`, { ca })).status, 200);
    const m = await get(`https://127.0.0.1:${metrics}/metrics`, { ca });
    assert.equal(m.status, 200);
    assert.match(m.body, /nv_inference_request_success|hloserve_/);
    const settings = await get(`https://127.0.0.1:${consolePort}/api/v1/settings`, {
      ca,
      headers: { authorization: `Bearer ${admin}` },
    });
    assert.equal(settings.status, 200, settings.body);
    const tls = (JSON.parse(settings.body) as { data: { tls: Record<string, unknown> } }).data.tls;
    assert.equal(tls['enabled'], true);
    assert.equal(tls['certFile'], certs.serverCert);
    assert.equal(tls['subject'], 'CN=localhost');
    assert.equal(tls['clientCertificates'], false);
    assert.equal(typeof tls['validTo'], 'string');
    for (const port of [http, metrics, consolePort]) {
      // A plaintext request to a TLS port gets no HTTP answer.
      await assert.rejects(get(`http://127.0.0.1:${port}/`), `plaintext to ${port} refused`);
      // Nor does a TLS client that does not trust the CA.
      await assert.rejects(get(`https://127.0.0.1:${port}/`), /self.signed|unable to verify|certificate/i);
    }
  });

  test('the live feed over wss', async () => {
    const ws = new WebSocket(
      `wss://127.0.0.1:${server.ports.console}/api/v1/stream`,
      ['hloserve.v1', `bearer.${admin}`],
      {
        ca,
      },
    );
    const first = await new Promise<string>((done, fail) => {
      ws.once('message', (d) => done(String(d)));
      ws.once('error', fail);
    });
    ws.close();
    assert.ok(first.length > 0);
    const plain = new WebSocket(`ws://127.0.0.1:${server.ports.console}/api/v1/stream`, [
      'hloserve.v1',
      `bearer.${admin}`,
    ]);
    await new Promise<void>((done) => {
      plain.once('error', () => done());
      plain.once('open', () => assert.fail('a plaintext WebSocket opened on a TLS port'));
    });
  });

  test('tritonclient over gRPC and HTTP with ssl, trusting the CA, matches the reference', async () => {
    // Not spawnSync: the server runs in this process and must keep answering.
    const stdout = await new Promise<string>((done, fail) =>
      execFile(
        process.env['PYTHON'] ?? 'python3',
        [
          join(pythonDir, 'infer_bundle.py'),
          `localhost:${server.ports.grpc}`,
          `localhost:${server.ports.http}`,
          join(examples, 'mlp'),
          'mlp',
          certs.caCert,
        ],
        { encoding: 'utf8', cwd: pythonDir, timeout: 120_000 },
        (err, out, errText) => (err ? fail(new Error(`${err.message}\n${errText}`)) : done(out)),
      ),
    );
    const report = JSON.parse(stdout.trim().split('\n').pop()!) as { checks: { name: string; ok: boolean }[] };
    assert.deepEqual(
      report.checks.filter((c) => !c.ok),
      [],
    );
    assert.ok(report.checks.some((c) => c.name === 'grpc: plaintext client refused'));
  });
});

suite('TLS material', () => {
  let dir: string;
  let certs: TestCerts;
  before(() => {
    dir = tempDir();
    certs = makeTestCerts(dir);
  });
  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const bad = (tls: { certFile: string; keyFile: string; clientCaFile: string | null }, pattern: RegExp) =>
    assert.throws(
      () => loadTlsMaterial(tls),
      (e: unknown) => e instanceof ServeError && e.code === 'HLO_ERR_CONFIG_INVALID' && pattern.test(e.message),
    );

  test('a missing, non-PEM or mismatched file stops the start naming the file', () => {
    const ok = { certFile: certs.serverCert, keyFile: certs.serverKey, clientCaFile: null };
    assert.equal(loadTlsMaterial(ok).subject, 'CN=localhost');
    bad(
      { ...ok, certFile: join(dir, 'nope.crt') },
      new RegExp(`endpoints\\.tls\\.cert \\(${dir}/nope\\.crt\\): cannot be read \\(ENOENT\\)`),
    );
    bad({ ...ok, certFile: certs.serverKey }, /endpoints\.tls\.cert \(.*server\.key\): not a PEM file/);
    bad({ ...ok, keyFile: certs.serverCert }, /endpoints\.tls\.key \(.*server\.crt\): not a PEM file/);
    bad(
      { ...ok, keyFile: certs.otherKey },
      /endpoints\.tls\.key \(.*other\.key\): does not match the certificate in .*server\.crt/,
    );
    bad(
      { ...ok, clientCaFile: join(dir, 'server.csr') },
      /endpoints\.tls\.client_ca \(.*server\.csr\): not a PEM file/,
    );
  });

  test('a bad file stops serve() before any model compiles', async () => {
    const s = tlsSettings(dir, certs);
    await assert.rejects(
      serve(
        examples,
        { ...s, endpoints: { ...s.endpoints, tls: { ...s.endpoints.tls!, keyFile: certs.otherKey } } },
        log,
      ),
      /endpoints\.tls\.key .*does not match/,
    );
  });

  test('client_ca: a client without a certificate the CA signed is refused (mutual TLS)', async () => {
    const material = loadTlsMaterial({
      certFile: certs.serverCert,
      keyFile: certs.serverKey,
      clientCaFile: certs.caCert,
    });
    // The health routes do not touch the worker.
    const m = await startMetricsServer({} as Worker, '127.0.0.1', 0, material);
    try {
      const ca = readFileSync(certs.caCert);
      const url = `https://127.0.0.1:${m.port}/healthz`;
      await assert.rejects(get(url, { ca }));
      const res = await get(url, { ca, cert: readFileSync(certs.clientCert), key: readFileSync(certs.clientKey) });
      assert.equal(res.status, 200);
      await assert.rejects(get(url, { ca, cert: readFileSync(certs.serverCert), key: readFileSync(certs.otherKey) }));
    } finally {
      await new Promise<void>((r) => m.server.close(() => r()));
    }
  });
});

suite('TLS and several workers', () => {
  const tls = { certFile: '/etc/hloserve/c.pem', keyFile: '/etc/hloserve/k.pem', clientCaFile: null };

  test('a supervisor checks the certificate before any worker starts, naming the file', async () => {
    const c = defaultConfig(examples);
    // As node.yaml's parser gives it: each worker's settings inherit the global block.
    const global = { ...c.global, endpoints: { ...c.global.endpoints, tls } };
    const workers = c.workers.map((w) => ({
      ...w,
      settings: { ...w.settings, endpoints: { ...w.settings.endpoints, tls } },
    }));
    await assert.rejects(
      runSupervisor({ ...c, global, workers }, null, { workers: '2' }, log),
      (e: unknown) =>
        e instanceof ServeError &&
        e.code === 'HLO_ERR_CONFIG_INVALID' &&
        e.message.startsWith('endpoints.tls.cert (/etc/hloserve/c.pem): cannot be read'),
    );
  });

  test('a worker entry with a TLS block of its own is refused: the gateway serves the node', () => {
    const c = defaultConfig(examples);
    const w = c.workers[0]!;
    const odd = { ...w, name: 'b', settings: { ...w.settings, endpoints: { ...w.settings.endpoints, tls } } };
    assert.throws(
      () => gatewayTlsFor({ ...c, workers: [w, odd] }),
      (e: unknown) =>
        e instanceof ServeError && /^workers\.b\.endpoints\.tls .*set endpoints\.tls under global only/.test(e.message),
    );
    assert.equal(gatewayTlsFor({ ...c, workers: [w, { ...w, name: 'b' }] }), null);
  });

  test('a supervised worker behind a TLS gateway binds loopback in plaintext; others keep node.yaml', () => {
    const s = mlpSettings();
    const withTls = { ...s, endpoints: { ...s.endpoints, host: '0.0.0.0', tls } };
    const behind = settingsBehindGateway(withTls, { HLOSERVE_SUPERVISED: '1', HLOSERVE_TLS_AT_GATEWAY: '1' });
    assert.equal(behind.endpoints.tls, null);
    assert.equal(behind.endpoints.host, '127.0.0.1');
    assert.equal(settingsBehindGateway(withTls, { HLOSERVE_TLS_AT_GATEWAY: '1' }), withTls, 'not supervised');
    assert.equal(settingsBehindGateway(withTls, { HLOSERVE_SUPERVISED: '1' }), withTls, 'gateway without TLS');
  });
});
