import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, suite, test } from 'node:test';
import { buildControlApp, type ControlApp } from '../../src/control/api/control-app.js';
import { WorkerModelPort } from '../../src/control/api/worker-model-port.js';
import { openStore, type Store } from '../../src/state/index.js';
import { trialCompiler } from '../../src/control/uploads/trial-compile.js';
import { DEFAULT_UPLOAD_LIMITS, UploadService } from '../../src/control/uploads/upload-service.js';
import { Worker } from '../../src/worker/worker.js';
import { tar, tarEntry, tgz, zip } from './archives.js';
import { adminToken, examples, inferMlp, log, mint, mlpSettings, tempDir } from './harness.js';

const mlpDir = join(examples, 'mlp');
const mlp = new Map(readdirSync(mlpDir).map((f) => [f, readFileSync(join(mlpDir, f))]));
const bundle = (over: Record<string, Buffer | string | null> = {}, prefix = ''): Buffer[] => {
  const files = new Map<string, Buffer | string>(mlp);
  for (const [k, v] of Object.entries(over))
    if (v === null) files.delete(k);
    else files.set(k, v);
  return [...files].map(([k, v]) => tarEntry(prefix + k, v));
};

/** Every path and byte under the repository, hidden files included. */
function treeHash(dir: string): string {
  const h = createHash('sha256');
  const walk = (d: string): void => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      h.update(`${p}\n`);
      if (statSync(p).isDirectory()) walk(p);
      else h.update(readFileSync(p));
    }
  };
  walk(dir);
  return h.digest('hex');
}

suite('bundle uploads', () => {
  let dir: string;
  let repo: string;
  let worker: Worker;
  let store: Store;
  let control: ControlApp;
  let operator: string;
  let admin: string;
  before(async () => {
    dir = tempDir();
    repo = join(dir, 'repo');
    cpSync(mlpDir, join(repo, 'mlp'), { recursive: true });
    const settings = { ...mlpSettings(), modelsInclude: [] as string[] };
    worker = await Worker.start({ modelRepo: repo, settings, log });
    store = await openStore({ cacheDir: dir });
    control = await buildControlApp({
      port: new WorkerModelPort(worker, settings),
      store,
      log,
      metricIntervalMs: 0,
      options: {
        setupTokenFile: join(dir, 'setup-token'),
        allowedOrigins: [],
        feed: { sampleMs: 60_000, heartbeatMs: 60_000, highWaterBytes: 1 << 20 },
        uploads: {
          stagingDir: join(dir, 'uploads'),
          modelRepo: repo,
          limits: {
            maxUploadBytes: 64 << 20,
            maxFiles: 16,
            maxFileBytes: 8 << 20,
            maxTotalBytes: 16 << 20,
            maxRatio: 100,
          },
          trialCompile: trialCompiler(worker.runtime),
        },
      },
    });
    const h = { control, store } as never;
    admin = await adminToken(h);
    operator = (await mint(h, admin, 'operator')).token;
  });
  after(async () => {
    await control?.close();
    await store?.close();
    await worker?.stop(false);
    rmSync(dir, { recursive: true, force: true });
  });

  const req = (
    method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
    url: string,
    o: { token?: string; body?: object | Buffer; headers?: Record<string, string> } = {},
  ) =>
    control.app.inject({
      method,
      url,
      headers: { authorization: `Bearer ${o.token ?? operator}`, ...o.headers },
      ...(o.body !== undefined ? { payload: o.body } : {}),
    });
  const chunk = (id: string, offset: number, data: Buffer) =>
    req('PATCH', `/api/v1/uploads/${id}`, {
      body: data,
      headers: { 'content-type': 'application/offset+octet-stream', 'upload-offset': String(offset) },
    });

  /** Creates, sends in chunks and completes; returns the completion's answer. */
  async function upload(
    bytes: Buffer,
    filename: string,
    model: string,
    o: { sha256?: string; token?: string; chunkBytes?: number } = {},
  ) {
    const created = await req('POST', '/api/v1/uploads', {
      token: o.token,
      body: { filename, model, sizeBytes: bytes.length, ...(o.sha256 ? { sha256: o.sha256 } : {}) },
    });
    assert.equal(created.statusCode, 201, created.body);
    const id = created.json().data.id as string;
    const step = o.chunkBytes ?? 1 << 20;
    for (let at = 0; at < bytes.length; at += step) {
      const r = await chunk(id, at, bytes.subarray(at, at + step));
      assert.equal(r.statusCode, 200, r.body);
    }
    return { id, res: await req('POST', `/api/v1/uploads/${id}/complete`, { token: o.token, body: {} }) };
  }

  test('a real bundle in chunks, interrupted and resumed, validated, installed and loaded, then served', async () => {
    const bytes = tgz(bundle({}, 'mlp2/'));
    const created = await req('POST', '/api/v1/uploads', {
      body: {
        filename: 'mlp2.tar.gz',
        model: 'mlp2',
        sizeBytes: bytes.length,
        sha256: createHash('sha256').update(bytes).digest('hex'),
      },
    });
    const id = created.json().data.id as string;
    const half = Math.floor(bytes.length / 2);
    assert.equal((await chunk(id, 0, bytes.subarray(0, 4096))).statusCode, 200);
    // The connection drops; the client resends from a stale offset and is told where the upload stands.
    const stale = await chunk(id, 0, bytes.subarray(0, half));
    assert.equal(stale.statusCode, 409);
    assert.match(stale.json().error, /Upload-Offset 0 does not match the upload's offset 4096/);
    const where = await req('GET', `/api/v1/uploads/${id}`);
    assert.equal(where.headers['upload-offset'], '4096');
    assert.equal((await chunk(id, 4096, bytes.subarray(4096, half))).statusCode, 200);
    assert.equal((await chunk(id, half, bytes.subarray(half))).statusCode, 200);
    const done = await req('POST', `/api/v1/uploads/${id}/complete`, { body: {} });
    assert.equal(done.statusCode, 200, done.body);
    assert.equal(done.json().data.state, 'installed');
    assert.deepEqual(readdirSync(join(repo, 'mlp2')).sort(), [...mlp.keys()].sort());
    assert.equal(worker.modelReady('mlp2', ''), true, 'loaded after install');
    const res = await inferMlp(worker, 'u', 'mlp2');
    assert.deepEqual(res.outputs[0]!.shape, [1, 10]);
    // A second upload of the same model replaces it; the previous version is kept beside it.
    const again = await upload(
      zip([...mlp].map(([name, data]) => ({ name, data, deflate: true }))),
      'mlp2.zip',
      'mlp2',
    );
    assert.equal(again.res.statusCode, 200, again.res.body);
    assert.equal(readdirSync(repo).filter((n) => n.startsWith('.mlp2.previous-')).length, 1);
    const audit = await store.listAudit({ limit: 100 });
    assert.equal(audit.filter((r) => r.action === 'upload.complete' && r.result === 'ok').length, 2);
  });

  const big = Buffer.alloc(9 << 20);
  // Under the file limit (8 MiB here), so that the expansion limit is what refuses it.
  const bomb = Buffer.alloc(7 << 20);
  const mlir = (b: number) => mlp.get(`model.b${b}.mlir`)!;
  const weights = mlp.get('weights.safetensors')!;
  const hugeHeader = Buffer.from(weights);
  hugeHeader.writeBigUInt64LE(1n << 40n, 0);
  const goodTar = tar(bundle());
  const BAD: { what: string; file: string; bytes: () => Buffer; reason: RegExp; sha256?: string; token?: 'admin' }[] = [
    {
      what: 'path traversal',
      file: 'b.tar',
      bytes: () => tar([...bundle(), tarEntry('../evil', 'x')]),
      reason: /'\.\.' is not allowed/,
    },
    {
      what: 'absolute path',
      file: 'b.tar',
      bytes: () => tar([...bundle(), tarEntry('/etc/evil', 'x')]),
      reason: /absolute paths/,
    },
    {
      what: 'symbolic link',
      file: 'b.tar',
      bytes: () => tar([...bundle(), tarEntry('l', '', { type: '2', linkname: '/etc/passwd' })]),
      reason: /symbolic link/,
    },
    {
      what: 'hard link',
      file: 'b.tar',
      bytes: () => tar([...bundle(), tarEntry('l', '', { type: '1', linkname: 'manifest.yaml' })]),
      reason: /hard link/,
    },
    {
      what: 'character device',
      file: 'b.tar',
      bytes: () => tar([...bundle(), tarEntry('d', '', { type: '3' })]),
      reason: /character device/,
    },
    {
      what: 'block device',
      file: 'b.tar',
      bytes: () => tar([...bundle(), tarEntry('d', '', { type: '4' })]),
      reason: /block device/,
    },
    { what: 'FIFO', file: 'b.tar', bytes: () => tar([...bundle(), tarEntry('f', '', { type: '6' })]), reason: /FIFO/ },
    {
      what: 'pax header',
      file: 'b.tar',
      bytes: () => tar([tarEntry('pax', 'path=x\n', { type: 'x' }), ...bundle()]),
      reason: /pax extended header/,
    },
    {
      what: 'duplicate entry',
      file: 'b.tar',
      bytes: () => tar([...bundle(), tarEntry('manifest.yaml', mlp.get('manifest.yaml')!)]),
      reason: /duplicate entry/,
    },
    {
      what: 'nested directory',
      file: 'b.tar',
      bytes: () => tar([...bundle(), tarEntry('a/b/c', 'x')]),
      reason: /bundles are flat/,
    },
    {
      what: 'backslash name',
      file: 'b.tar',
      bytes: () => tar([...bundle(), tarEntry('a\\b', 'x')]),
      reason: /backslashes/,
    },
    {
      what: 'bad header checksum',
      file: 'b.tar',
      bytes: () => tar([tarEntry('manifest.yaml', 'x', { corruptChecksum: true })]),
      reason: /bad checksum/,
    },
    {
      what: 'truncated tar',
      file: 'b.tar',
      bytes: () => goodTar.subarray(0, goodTar.length - 5000),
      reason: /truncated/,
    },
    { what: 'empty archive', file: 'b.tar', bytes: () => tar([]), reason: /holds no files/ },
    {
      what: 'too many files',
      file: 'b.tar',
      bytes: () => tar([...bundle(), ...Array.from({ length: 10 }, (_, i) => tarEntry(`extra${i}`, 'x'))]),
      reason: /more than 16 entries/,
    },
    {
      what: 'file over the size limit',
      file: 'b.tar',
      bytes: () => tar([...bundle(), tarEntry('big.bin', big)]),
      reason: /file limit/,
    },
    {
      what: 'missing manifest',
      file: 'b.tar',
      bytes: () => tar(bundle({ 'manifest.yaml': null })),
      reason: /manifest\.yaml: missing/,
    },
    {
      what: 'manifest not YAML',
      file: 'b.tar',
      bytes: () => tar(bundle({ 'manifest.yaml': 'format_version: [unclosed' })),
      reason: /manifest\.yaml/,
    },
    {
      what: 'module signature vs manifest',
      file: 'b.tar',
      bytes: () => tar(bundle({ 'model.b1.mlir': mlir(4) })),
      reason: /model\.b1\.mlir: result 0: compiled for batch 1/,
    },
    {
      what: 'oversize safetensors header',
      file: 'b.tar',
      bytes: () => tar(bundle({ 'weights.safetensors': hugeHeader })),
      reason: /weights\.safetensors/,
    },
    {
      what: 'truncated safetensors',
      file: 'b.tar',
      bytes: () => tar(bundle({ 'weights.safetensors': weights.subarray(0, weights.length - 100) })),
      reason: /weights\.safetensors/,
    },
    {
      what: 'hooks by an operator',
      file: 'b.tar',
      bytes: () => tar([...bundle(), tarEntry('model.js', 'export {}')]),
      reason: /admins only/,
    },
    {
      what: 'gzip bomb',
      file: 'b.tar.gz',
      bytes: () => tgz([tarEntry('manifest.yaml', bomb)]),
      reason: /expands past/,
    },
    {
      what: 'corrupt gzip',
      file: 'b.tgz',
      bytes: () => Buffer.from('this is not gzip at all, only text'),
      reason: /not a valid gzip/,
    },
    {
      what: 'zip traversal',
      file: 'b.zip',
      bytes: () => zip([{ name: '../evil', data: 'x' }]),
      reason: /'\.\.' is not allowed/,
    },
    {
      what: 'zip symbolic link',
      file: 'b.zip',
      bytes: () => zip([{ name: 'l', data: '/etc/passwd', mode: 0o120777 }]),
      reason: /symbolic link/,
    },
    {
      what: 'zip encrypted entry',
      file: 'b.zip',
      bytes: () => zip([{ name: 'manifest.yaml', data: 'x', flags: 1 }]),
      reason: /encrypted/,
    },
    {
      what: 'zip truncated (no directory)',
      file: 'b.zip',
      bytes: () => zip([{ name: 'manifest.yaml', data: 'x'.repeat(100) }]).subarray(0, 60),
      reason: /no end of central directory/,
    },
    {
      what: 'zip CRC mismatch',
      file: 'b.zip',
      bytes: () => zip([{ name: 'manifest.yaml', data: 'x', crc: 1 }]),
      reason: /CRC-32/,
    },
    {
      what: 'zip bomb',
      file: 'b.zip',
      bytes: () => zip([{ name: 'manifest.yaml', data: Buffer.alloc(4 << 20), deflate: true }]),
      reason: /expands past/,
    },
    { what: 'sha256 mismatch', file: 'b.tar', bytes: () => goodTar, reason: /sha256/, sha256: 'a'.repeat(64) },
  ];

  for (const c of BAD) {
    test(`refused: ${c.what}, with the repository byte for byte unchanged`, async () => {
      const before = treeHash(repo);
      const { id, res } = await upload(c.bytes(), c.file, 'bad', { sha256: c.sha256 });
      assert.ok(res.statusCode >= 400 && res.statusCode < 500, `${res.statusCode} ${res.body}`);
      assert.match(res.json().error, c.reason);
      assert.equal(treeHash(repo), before);
      const row = (await req('GET', `/api/v1/uploads/${id}`)).json().data;
      assert.equal(row.state, 'rejected');
      assert.match(row.error, c.reason);
      assert.deepEqual(readdirSync(join(dir, 'uploads')), [], 'staging is cleaned up');
    });
  }

  test('refused before any byte: unknown format, oversize, a chunk past the size, completing early', async () => {
    const before = treeHash(repo);
    const rar = await req('POST', '/api/v1/uploads', { body: { filename: 'b.rar', model: 'bad', sizeBytes: 10 } });
    assert.equal(rar.statusCode, 400);
    assert.match(rar.json().error, /filename: 'b\.rar' is not \.tar/);
    const huge = await req('POST', '/api/v1/uploads', {
      body: { filename: 'b.tar', model: 'bad', sizeBytes: 65 << 20 },
    });
    assert.equal(huge.statusCode, 413);
    const c = await req('POST', '/api/v1/uploads', { body: { filename: 'b.tar', model: 'bad', sizeBytes: 10 } });
    const id = c.json().data.id;
    const past = await chunk(id, 0, Buffer.alloc(11));
    assert.equal(past.statusCode, 400);
    assert.match(past.json().error, /past the declared size 10/);
    const early = await req('POST', `/api/v1/uploads/${id}/complete`, { body: {} });
    assert.equal(early.statusCode, 409);
    assert.equal((await req('DELETE', `/api/v1/uploads/${id}`)).json().data.state, 'cancelled');
    assert.equal(treeHash(repo), before);
  });

  test('an admin may upload a bundle with hooks past the archive checks', async () => {
    const hooks = 'export function preprocess(t) { return t; }\n';
    const { res } = await upload(tar([...bundle(), tarEntry('model.js', hooks)]), 'h.tar', 'hooked', {
      token: admin,
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.ok(readdirSync(join(repo, 'hooked')).includes('model.js'));
    assert.equal(worker.repositoryIndex(true).find((m) => m.name === 'hooked')?.state, 'READY');
  });
});

suite('bundle uploads: staging on another filesystem than the repository', () => {
  // /dev/shm is a tmpfs on Linux: a rename from it into the repository fails with EXDEV, and the
  // bundle is copied instead.
  const shm = '/dev/shm';
  const usable = process.platform === 'linux' && statSync(shm, { throwIfNoEntry: false })?.isDirectory() === true;

  test('the bundle is copied into place, whole and readable', { skip: !usable }, async () => {
    const dir = tempDir();
    const staging = mkdtempSync(join(shm, 'hloserve-uploads-'));
    const store = await openStore({ cacheDir: dir });
    try {
      const repo = join(dir, 'repo');
      mkdirSync(repo);
      assert.notEqual(statSync(staging).dev, statSync(repo).dev, 'two filesystems');
      const service = new UploadService(store, { stagingDir: staging, modelRepo: repo, limits: DEFAULT_UPLOAD_LIMITS });
      const archive = tar([...mlp].map(([name, data]) => tarEntry(name, data)));
      const row = await service.create({ filename: 'm.tar', model: 'm', sizeBytes: archive.length, by: 'test' });
      await service.append(row.id, 0, archive);
      assert.equal((await service.complete(row.id, { allowHooks: false })).state, 'installed');
      for (const [name, data] of mlp) assert.ok(readFileSync(join(repo, 'm', name)).equals(data), name);
      assert.deepEqual(readdirSync(repo).sort(), ['m']);
    } finally {
      await store.close();
      rmSync(staging, { recursive: true, force: true });
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
