import assert from 'node:assert/strict';
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, suite, test } from 'node:test';
import { defaultConfig, workerSettings } from '../../src/config/node-config.js';
import { Worker } from '../../src/worker/worker.js';
import { adminToken, examples, log, mint, startControl, tempDir, type Harness } from './harness.js';

suite('control API: model IO, histograms, queues, versions and rollback, try it (inject, real Worker)', () => {
  let worker: Worker;
  let h: Harness;
  let dir: string;
  let repo: string;
  const tok = { viewer: '', operator: '' };

  before(async () => {
    dir = tempDir();
    repo = join(dir, 'models');
    mkdirSync(repo);
    cpSync(join(examples, 'mlp'), join(repo, 'mlp'), { recursive: true });
    // The same model without a reference: try-it makes up an input.
    cpSync(join(examples, 'mlp'), join(repo, 'mlp-noref'), { recursive: true });
    rmSync(join(repo, 'mlp-noref', 'reference.safetensors'));
    // A kept previous version, told apart by its description.
    const prev = join(repo, '.mlp.previous-1000');
    cpSync(join(examples, 'mlp'), prev, { recursive: true });
    const manifest = join(prev, 'manifest.yaml');
    writeFileSync(
      manifest,
      readFileSync(manifest, 'utf8').replace(/^description: .*$/m, 'description: the previous mlp'),
    );
    const settings = {
      ...workerSettings(defaultConfig(repo)),
      modelsInclude: ['mlp', 'mlp-noref'],
      modelControlMode: 'explicit' as const,
    };
    worker = await Worker.start({ modelRepo: repo, settings, log });
    h = await startControl(worker, dir, { settings });
    const admin = await adminToken(h);
    tok.viewer = (await mint(h, admin, 'viewer')).token;
    tok.operator = (await mint(h, admin, 'operator')).token;
  });
  after(async () => {
    await h?.close();
    await worker?.stop(false);
    rmSync(dir, { recursive: true, force: true });
  });

  const call = (method: 'GET' | 'POST', url: string, token: string | null, payload?: object) =>
    h.control.app.inject({
      method,
      url: `/api/v1${url}`,
      headers: token ? { authorization: `Bearer ${token}` } : {},
      ...(payload ? { payload } : {}),
    });
  const auditCount = async () => (await h.store.listAudit({ limit: 1000 })).length;

  test('scopes: reads need a viewer token; try and rollback need an operator token', async () => {
    for (const url of ['/models/mlp/io', '/models/mlp/histograms', '/models/mlp/versions', '/queues']) {
      assert.equal((await call('GET', url, null)).statusCode, 401, url);
      assert.equal((await call('GET', url, tok.viewer)).statusCode, 200, url);
    }
    const before = await auditCount();
    assert.equal((await call('POST', '/models/mlp/try', null)).statusCode, 401);
    assert.equal((await call('POST', '/models/mlp/try', tok.viewer)).statusCode, 403);
    assert.equal((await call('POST', '/models/mlp/rollback', tok.viewer, { version: '1000' })).statusCode, 403);
    assert.equal(await auditCount(), before, 'refused by scope: nothing reached the audit');
  });

  test('io names the axes and the wire shapes of the manifest', async () => {
    const io = (await call('GET', '/models/mlp/io', tok.viewer)).json().data;
    assert.equal(io.kind, 'model');
    assert.equal(io.hooks, false);
    assert.equal(io.reference, 'reference.safetensors');
    assert.deepEqual(io.compiledBatchSizes, [1, 4, 8, 16, 32]);
    assert.deepEqual(io.inputs, [
      {
        name: 'x',
        datatype: 'FP32',
        letters: 'fn',
        wireLetters: 'nf',
        dims: { f: 784 },
        wireShape: [-1, 784],
        wireBatchAxis: 0,
      },
    ]);
    assert.deepEqual(io.outputs[0].wireShape, [-1, 10]);
    assert.equal((await call('GET', '/models/nope/io', tok.viewer)).statusCode, 404);
  });

  test('try runs the reference input through the infer path and matches the reference output', async () => {
    const before = await auditCount();
    const res = await call('POST', '/models/mlp/try', tok.operator);
    assert.equal(res.statusCode, 200, res.body);
    const r = res.json().data;
    assert.equal(r.source, 'reference.safetensors');
    assert.deepEqual(r.inputs[0].shape, [4, 784]);
    assert.deepEqual(r.outputs[0], { ...r.outputs[0], name: 'logits', datatype: 'FP32', shape: [4, 10], elements: 40 });
    assert.equal(r.outputs[0].preview.length, 40);
    assert.ok(r.maxAbsDiff !== null && r.maxAbsDiff < 1e-3, `max |diff| ${r.maxAbsDiff}`);
    assert.ok(r.latencyMs > 0);
    assert.deepEqual(JSON.parse(r.requestJson).inputs[0].shape, [4, 784], 'the request as KServe JSON, for curl');
    assert.equal(await auditCount(), before, 'an inference is not audited');
    assert.equal((await call('POST', '/models/nope/try', tok.operator)).statusCode, 404);
  });

  test('without a reference, try sends a generated input of the right datatype and shape', async () => {
    assert.equal((await call('GET', '/models/mlp-noref/io', tok.viewer)).json().data.reference, 'generated');
    const res = await call('POST', '/models/mlp-noref/try', tok.operator);
    assert.equal(res.statusCode, 200, res.body);
    const r = res.json().data;
    assert.equal(r.source, 'generated');
    assert.deepEqual(r.inputs[0].shape, [1, 784]);
    assert.equal(r.inputs[0].datatype, 'FP32');
    assert.deepEqual(r.outputs[0].shape, [1, 10]);
    assert.equal(r.maxAbsDiff, null);
  });

  test('histograms and queues count what try ran', async () => {
    const hist = (await call('GET', '/models/mlp/histograms', tok.viewer)).json().data;
    assert.ok(hist.latencySeconds.count >= 1);
    assert.equal(hist.latencySeconds.counts.length, hist.latencySeconds.bounds.length + 1);
    assert.ok((hist.batchSizes['4'] ?? 0) >= 1, JSON.stringify(hist.batchSizes));
    assert.ok(hist.rowsServed >= 4);
    const q = (await call('GET', '/queues', tok.viewer)).json().data;
    assert.equal(q.discipline, 'fair');
    const mlp = q.models.find((m: { name: string }) => m.name === 'mlp');
    assert.equal(mlp.depth, 0);
    assert.equal(mlp.oldestWaitMs, 0);
    assert.equal(mlp.deadlineMisses, 0);
    assert.equal(mlp.weightShare, 0, 'no work queued: fair entitles it to nothing now');
    assert.equal(mlp.contendedShare, 0, 'one model never waits behind another');
    assert.ok(mlp.computeSecondsTotal > 0);
    const model = (await call('GET', '/models/mlp', tok.viewer)).json().data;
    assert.deepEqual(model.queue, { depth: 0, rows: 0, inflight: 0, oldestWaitMs: 0, deadlineMisses: 0 });
  });

  test('versions lists the kept version; rollback puts it back, keeps the replaced one, audits once', async () => {
    const listed = (await call('GET', '/models/mlp/versions', tok.viewer)).json().data;
    assert.deepEqual(
      listed.map((v: { id: string; description: string }) => [v.id, v.description]),
      [
        ['current', listed[0].description],
        ['1000', 'the previous mlp'],
      ],
    );
    assert.notEqual(listed[0].manifestSha256, listed[1].manifestSha256);

    let before = await auditCount();
    assert.equal((await call('POST', '/models/mlp/rollback', tok.operator, { version: '../x' })).statusCode, 400);
    assert.equal((await call('POST', '/models/mlp/rollback', tok.operator, { version: '42' })).statusCode, 404);
    assert.equal(await auditCount(), before + 2, 'refusals by the engine are audited with their code');

    before = await auditCount();
    const res = await call('POST', '/models/mlp/rollback', tok.operator, { version: '1000' });
    assert.equal(res.statusCode, 200, res.body);
    const after = res.json().data as { id: string; current: boolean; description: string }[];
    assert.equal(after[0]!.current, true);
    assert.equal(after[0]!.description, 'the previous mlp');
    assert.equal(after.length, 2, 'the replaced version is kept under a new id');
    assert.notEqual(after[1]!.id, '1000');
    assert.equal(await auditCount(), before + 1);
    const [rec] = await h.store.listAudit({ limit: 1 });
    assert.equal(rec!.action, 'model.rollback');
    assert.equal(rec!.result, 'ok');
    const io = (await call('GET', '/models/mlp/io', tok.viewer)).json().data;
    assert.equal(io.description, 'the previous mlp', 'the rolled-back version serves');
    assert.equal((await call('POST', '/models/mlp/try', tok.operator)).statusCode, 200);
  });
});
