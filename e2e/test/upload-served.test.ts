/**
 * Upload end to end: the example mlp bundle, packed as .tar.gz, uploaded in chunks over HTTP to
 * a real `hloserve serve` (explicit mode, empty repository), its connection cut in the middle of
 * a chunk and the upload resumed from the offset the server reports, validated, installed,
 * loaded, and then served to Triton's own Python clients over gRPC and HTTP, matching the
 * bundle's reference outputs.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, suite, test } from 'node:test';
import { examplesDir, runPython, startServer, type ServerProcess } from '../src/server-process.js';

const MODEL = 'uploaded-mlp';

interface Report {
  checks: { name: string; ok: boolean; detail: string }[];
  errors: Record<string, number>;
}

suite('an uploaded bundle is served to tritonclient', () => {
  let dir: string;
  let server: ServerProcess;
  let base: string;
  let token: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'hloserve-upload-e2e-'));
    mkdirSync(join(dir, 'repo'));
    server = await startServer({
      HLOSERVE_MODEL_REPO: join(dir, 'repo'),
      HLOSERVE_CACHE_DIR: join(dir, 'cache'),
      HLOSERVE_MODEL_CONTROL_MODE: 'explicit',
    });
    base = `http://127.0.0.1:${server.ports.console}/api/v1`;
    const setupToken = readFileSync(join(dir, 'cache', 'console-setup-token'), 'utf8').trim();
    const res = await fetch(`${base}/setup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ setupToken }),
    });
    assert.equal(res.status, 201, await res.clone().text());
    token = ((await res.json()) as { data: { token: string } }).data.token;
  });
  after(async () => {
    assert.equal(await server.stop(), 0);
    rmSync(dir, { recursive: true, force: true });
  });

  const api = (path: string, init: RequestInit = {}) =>
    fetch(`${base}${path}`, { ...init, headers: { authorization: `Bearer ${token}`, ...init.headers } });

  /** Sends half of `data` as a PATCH that claims all of it, then cuts the connection. */
  const cutChunk = (id: string, offset: number, data: Buffer) =>
    new Promise<void>((done) => {
      const req = request(`${base}/uploads/${id}`, {
        method: 'PATCH',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/offset+octet-stream',
          'upload-offset': String(offset),
          'content-length': String(data.length),
        },
      });
      req.on('error', () => done());
      req.on('response', () => done());
      req.write(data.subarray(0, data.length >> 1), () => setTimeout(() => req.destroy(), 100));
    });

  test('chunks, a cut connection, resume, install, load, then tritonclient over gRPC and HTTP', async () => {
    const src = join(dir, 'src');
    cpSync(join(examplesDir, 'mlp'), join(src, MODEL), { recursive: true });
    const archive = join(dir, `${MODEL}.tar.gz`);
    execFileSync('tar', ['-czf', archive, '-C', src, ...readdirSync(join(src, MODEL)).map((f) => `${MODEL}/${f}`)]);
    const bytes = readFileSync(archive);
    const created = await api('/uploads', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        filename: `${MODEL}.tar.gz`,
        model: MODEL,
        sizeBytes: bytes.length,
        sha256: createHash('sha256').update(bytes).digest('hex'),
      }),
    });
    assert.equal(created.status, 201, await created.clone().text());
    const id = ((await created.json()) as { data: { id: string } }).data.id;

    const step = 64 * 1024;
    const send = (at: number) =>
      api(`/uploads/${id}`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/offset+octet-stream', 'upload-offset': String(at) },
        body: bytes.subarray(at, at + step),
      });
    let at = 0;
    for (; at < Math.min(2 * step, bytes.length); at += step) assert.equal((await send(at)).status, 200);
    await cutChunk(id, at, bytes.subarray(at, at + step));
    // Resume from where the server says the upload stands.
    const where = await api(`/uploads/${id}`);
    at = Number(where.headers.get('upload-offset'));
    assert.ok(at >= 2 * step && at <= 3 * step, `offset after the cut: ${at}`);
    for (; at < bytes.length; at += step) {
      const r = await send(at);
      assert.equal(r.status, 200, await r.text());
    }
    const done = await api(`/uploads/${id}/complete`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    assert.equal(done.status, 200, await done.clone().text());
    assert.equal(((await done.json()) as { data: { state: string } }).data.state, 'installed');

    const report = await runPython<Report>('infer_bundle.py', [
      server.grpcUrl(),
      server.httpUrl(),
      join(examplesDir, 'mlp'),
      MODEL,
    ]);
    assert.deepEqual(
      report.checks.filter((c) => !c.ok),
      [],
    );
    assert.ok(Object.keys(report.errors).some((k) => k.startsWith('grpc:')));
    assert.ok(Object.keys(report.errors).some((k) => k.startsWith('http:')));
  });
});
