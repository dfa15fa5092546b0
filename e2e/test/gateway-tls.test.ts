/**
 * TLS with several workers through the real command: `hloserve serve --workers 2` with
 * `endpoints.tls` in node.yaml. The gateway serves TLS on every public port (gRPC, HTTP, metrics,
 * console and its live feed); the workers behind it listen in plaintext on loopback. Triton's
 * Python clients with ssl match the reference over gRPC and HTTP; plaintext clients are refused.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import { request, type RequestOptions } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, suite, test } from 'node:test';
import { WebSocket } from 'ws';
import { selfSignedCertificate } from '@hloserve/common/testing/self-signed';
import { examplesDir, runPython, startServer, type ServerProcess } from '../src/server-process.js';
import { writeTlsNodeYaml } from '../src/tls-node-yaml.js';

interface Answer {
  status: number;
  body: string;
}

const https = (url: string, opts: RequestOptions & { body?: string } = {}) =>
  new Promise<Answer>((resolve, reject) => {
    const req = request(url, opts, (r) => {
      let body = '';
      r.setEncoding('utf8');
      r.on('data', (c: string) => (body += c));
      r.on('end', () => resolve({ status: r.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end(opts.body);
  });

const records = (logs: readonly string[]) =>
  logs.flatMap((l) => {
    const j = l.indexOf('{');
    if (j < 0) return [];
    try {
      return [JSON.parse(l.slice(j)) as Record<string, unknown>];
    } catch {
      return [];
    }
  });

suite('two workers behind the gateway with TLS from node.yaml', () => {
  let dir: string;
  let ca: Buffer;
  let server: ServerProcess;
  let base: string;
  let token: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'hloserve-gateway-tls-'));
    selfSignedCertificate(dir, 'server');
    ca = readFileSync(join(dir, 'server.crt'));
    server = await startServer({}, 300_000, ['--config', writeTlsNodeYaml(dir), '--workers', '2', '--base-port', '0']);
    base = `https://127.0.0.1:${server.ports.console}`;
  });
  after(async () => {
    if (server) assert.equal(await server.stop(), 0, 'SIGTERM drains the gateway and both workers, exit 0');
    rmSync(dir, { recursive: true, force: true });
  });

  test('the supervisor serves TLS; each worker listens in plaintext on loopback', () => {
    const all = records(server.logs);
    const supervisor = all.find((r) => r['msg'] === 'listening');
    assert.equal(supervisor?.['tls'], true);
    const workers = all.filter((r) => r['msg'] === 'worker listening');
    assert.deepEqual(workers.map((w) => w['worker']).sort(), ['worker0', 'worker1']);
    for (const w of workers) {
      assert.equal(w['tls'], false);
      assert.equal(w['host'], '127.0.0.1');
    }
  });

  test("Triton's Python clients with ssl match the reference over gRPC and HTTP; plaintext is refused", async () => {
    const report = await runPython<{ checks: { name: string; ok: boolean; detail: string }[] }>('infer_bundle.py', [
      `localhost:${server.ports.grpc}`,
      `localhost:${server.ports.http}`,
      join(examplesDir, 'mlp'),
      'mlp',
      join(dir, 'server.crt'),
    ]);
    assert.deepEqual(
      report.checks.filter((c) => !c.ok),
      [],
    );
    for (const name of ['grpc: plaintext client refused', 'http: plaintext client refused'])
      assert.ok(
        report.checks.some((c) => c.name === name && c.ok),
        name,
      );
  });

  test('metrics over https carry both workers; plaintext gets no answer', async () => {
    const m = await https(`https://127.0.0.1:${server.ports.metrics}/metrics`, { ca });
    assert.equal(m.status, 200);
    for (const w of ['worker0', 'worker1']) assert.match(m.body, new RegExp(`worker="${w}"`));
    await assert.rejects(
      new Promise((resolve, reject) =>
        httpGet(`http://127.0.0.1:${server.ports.metrics}/metrics`, resolve).on('error', reject),
      ),
    );
    await assert.rejects(https(`https://127.0.0.1:${server.ports.metrics}/metrics`), /self.signed|certificate/i);
  });

  test("the console API over https: setup, settings naming the gateway's certificate, placements", async () => {
    // The workers share one state store; the setup token still valid is the latest one logged.
    const tokens = server.logs
      .map((l) => /#setup=([A-Za-z0-9._~-]+)/.exec(l)?.[1])
      .filter((t): t is string => t !== undefined)
      .reverse();
    assert.ok(tokens.length > 0, 'the workers log a setup token');
    let minted: Answer | null = null;
    for (const setupToken of new Set(tokens)) {
      minted = await https(`${base}/api/v1/setup`, {
        ca,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ setupToken }),
      });
      if (minted.status === 201) break;
    }
    assert.equal(minted?.status, 201, minted?.body);
    token = (JSON.parse(minted!.body) as { data: { token: string } }).data.token;
    const auth = { authorization: `Bearer ${token}` };
    const s = await https(`${base}/api/v1/settings`, { ca, headers: auth });
    assert.equal(s.status, 200, s.body);
    const tls = (JSON.parse(s.body) as { data: { tls: Record<string, unknown> } }).data.tls;
    assert.equal(tls['enabled'], true);
    assert.equal(tls['certFile'], join(dir, 'server.crt'));
    assert.equal(tls['subject'], 'CN=localhost');
    assert.equal(tls['clientCertificates'], false);
    assert.ok(Date.parse(String(tls['validTo'])) > Date.now());
    const p = await https(`${base}/api/v1/placements`, { ca, headers: auth });
    assert.equal(p.status, 200, p.body);
    assert.deepEqual(
      (JSON.parse(p.body) as { data: { workers: { name: string }[] } }).data.workers.map((w) => w.name),
      ['worker0', 'worker1'],
    );
  });

  test('the live feed over wss through the gateway (Origin checked against the https page); ws refused', async () => {
    const ws = new WebSocket(
      `wss://127.0.0.1:${server.ports.console}/api/v1/stream`,
      ['hloserve.v1', `bearer.${token}`],
      {
        ca,
        origin: `https://127.0.0.1:${server.ports.console}`,
      },
    );
    const first = await new Promise<string>((done, fail) => {
      ws.once('message', (d) => done(String(d)));
      ws.once('error', fail);
    });
    ws.close();
    assert.match(first, /"type":"ready".*"scope":"admin"/, 'the feed greets the authenticated client');
    const foreign = new WebSocket(
      `wss://127.0.0.1:${server.ports.console}/api/v1/stream`,
      ['hloserve.v1', `bearer.${token}`],
      { ca, origin: 'https://evil.example' },
    );
    const refused = await new Promise<string>((done) => {
      foreign.once('message', (d) => done(String(d)));
      foreign.once('unexpected-response', (_q, r) => done(`HTTP ${r.statusCode}`));
      foreign.once('close', (code) => done(`closed ${code}`));
      foreign.once('error', (e) => done(e.message));
    });
    foreign.terminate();
    assert.doesNotMatch(refused, /"type":"ready"/, `a foreign origin got feed data: ${refused}`);
    const plain = new WebSocket(`ws://127.0.0.1:${server.ports.console}/api/v1/stream`, [
      'hloserve.v1',
      `bearer.${token}`,
    ]);
    await new Promise<void>((done) => {
      plain.once('error', () => done());
      plain.once('open', () => assert.fail('a plaintext WebSocket opened on a TLS port'));
    });
  });
});
