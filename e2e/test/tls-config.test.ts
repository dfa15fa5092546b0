/**
 * TLS from node.yaml through the real command: `hloserve serve --config node.yaml` with an
 * `endpoints.tls` block serves HTTPS on its HTTP, metrics and console ports and says so in its
 * "listening" record; a key that does not match the certificate stops it before it listens, naming
 * the file.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { get } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, suite, test } from 'node:test';
import { selfSignedCertificate } from '@hloserve/common/testing/self-signed';
import { startServer, type ServerProcess } from '../src/server-process.js';
import { writeTlsNodeYaml } from '../src/tls-node-yaml.js';

const status = (url: string, ca: Buffer) =>
  new Promise<number>((done, fail) => get(url, { ca }, (r) => (r.resume(), done(r.statusCode ?? 0))).on('error', fail));

suite('TLS from node.yaml through hloserve serve', () => {
  let dir: string;
  let server: ServerProcess;
  let ca: Buffer;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'hloserve-tls-e2e-'));
    selfSignedCertificate(dir, 'server');
    selfSignedCertificate(dir, 'other');
    ca = readFileSync(join(dir, 'server.crt'));
    server = await startServer({}, 120_000, ['--config', writeTlsNodeYaml(dir)]);
  });
  after(async () => {
    if (server) assert.equal(await server.stop(), 0);
    rmSync(dir, { recursive: true, force: true });
  });

  test('HTTP, metrics and console answer over https; the listening record says tls', async () => {
    const rec = server.logs.map((l) => (l.startsWith('{') ? JSON.parse(l) : {})).find((r) => r.msg === 'listening');
    assert.equal(rec.tls, true);
    const { http, metrics, console: consolePort } = server.ports;
    assert.equal(await status(`https://127.0.0.1:${http}/v2/health/ready`, ca), 200);
    assert.equal(await status(`https://127.0.0.1:${metrics}/readyz`, ca), 200);
    assert.equal(await status(`https://127.0.0.1:${consolePort}/api/v1/health`, ca), 200);
  });

  test('a key that does not match the certificate stops the start naming the file', async () => {
    await assert.rejects(startServer({}, 120_000, ['--config', writeTlsNodeYaml(dir, 'other')]), (e: Error) =>
      e.message.includes(`endpoints.tls.key (${join(dir, 'other.key')}): does not match the certificate`),
    );
  });
});
