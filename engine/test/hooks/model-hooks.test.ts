import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, suite, test } from 'node:test';
import { ServeError } from '@hloserve/common/errors';
import { loadBundle } from '../../src/bundle/bundle.js';
import { HookPool } from '../../src/hooks/hook-pool.js';
import { ModelHooks } from '../../src/hooks/model-hooks.js';
import type { HostTensor } from '../../src/tensor.js';
import { MLP_MANIFEST, removeDir, tempDir, writeMlpBundle } from '../bundle/fixtures.js';

// The test MLP takes x f32 [n,4] and gives y f32 [n,3]; its clients send u8 pixels and get labels.
const CLIENT_IO = `client_inputs:
  - {name: pixels, dtype: u8, shape: fn, dims: {f: 4}}
client_outputs:
  - {name: label, dtype: BYTES, shape: n}
`;
const HOOKS = `
export function preprocess({ pixels }) {
  const x = Float32Array.from(pixels.data, (v) => v / 255);
  return { x: { dtype: 'f32', shape: pixels.shape, data: x } };
}
export function postprocess({ y }, ctx) {
  const rows = y.shape[0];
  const labels = [];
  for (let r = 0; r < rows; r++) {
    const row = y.data.subarray(r * 3, r * 3 + 3);
    labels.push(new TextEncoder().encode('class' + row.indexOf(Math.max(...row))));
  }
  if (ctx.parameters.wrong) return { label: { dtype: 'BYTES', shape: [rows + 1], data: labels } };
  return { label: { dtype: 'BYTES', shape: [rows], data: labels } };
}
`;

const u8 = (name: string, shape: number[], values: number[]): HostTensor => ({
  name,
  dtype: 'u8',
  shape,
  data: Uint8Array.from(values),
});
const f32 = (name: string, shape: number[], values: number[]): HostTensor => ({
  name,
  dtype: 'f32',
  shape,
  data: new Uint8Array(Float32Array.from(values).buffer),
});
const ctx = (parameters: Record<string, string | number | boolean> = {}) => ({
  model: 'cls',
  requestId: '1',
  parameters,
  deadline: null,
});

suite('ModelHooks', async () => {
  const root = await tempDir();
  const pool = new HookPool({ threads: 1, maxQueued: 8, maxHeapMb: 64, name: 'test' });
  after(async () => {
    await pool.close();
    await removeDir(root);
  });
  const limits = { timeoutMs: 5_000 };

  test('preprocess turns client tensors into the executable inputs; postprocess into client outputs', async () => {
    await writeMlpBundle(root, 'cls', { 'manifest.yaml': MLP_MANIFEST + CLIENT_IO, 'model.mjs': HOOKS });
    const bundle = await loadBundle(join(root, 'cls'));
    const hooks = (await ModelHooks.load(bundle, pool, join(root, 'cache'), limits))!;
    assert.ok(hooks.hasPreprocess && hooks.hasPostprocess && !hooks.hasRun);
    const [x] = await hooks.preprocess([u8('pixels', [2, 4], [0, 255, 51, 102, 255, 0, 0, 0])], ctx());
    assert.equal(x!.name, 'x');
    assert.deepEqual(x!.shape, [2, 4]);
    assert.deepEqual(
      [...new Float32Array(x!.data.buffer, x!.data.byteOffset, 8)],
      [0, 1, 0.2, 0.4, 1, 0, 0, 0].map(Math.fround),
    );
    const [label] = await hooks.postprocess([f32('y', [2, 3], [0, 5, 1, 9, 0, 0])], ctx());
    assert.equal(label!.dtype, 'BYTES');
    assert.deepEqual(label!.shape, [2]);
    // KServe BYTES: u32 length then the bytes, per element.
    assert.equal(Buffer.from(label!.data).toString('latin1'), '\x06\0\0\0class1\x06\0\0\0class0');
  });

  test('a result that breaks the manifest fails with HLO_ERR_HOOK_FAILED, naming the tensor', async () => {
    const bundle = await loadBundle(join(root, 'cls'));
    const hooks = (await ModelHooks.load(bundle, pool, join(root, 'cache'), limits))!;
    await assert.rejects(
      hooks.postprocess([f32('y', [1, 3], [0, 5, 1])], ctx({ wrong: true })),
      (e: unknown) =>
        e instanceof ServeError &&
        e.code === 'HLO_ERR_HOOK_FAILED' &&
        /tensor "label": 1 elements for shape \[2\]/.test(e.message),
    );
    await assert.rejects(
      hooks.preprocess([u8('pixels', [1, 3], [1, 2, 3])], ctx()),
      (e: unknown) =>
        e instanceof ServeError && e.code === 'HLO_ERR_HOOK_FAILED' && /dimension 1 is 3, expected 4/.test(e.message),
    );
  });

  test('checked in one pool, the hooks run in their own: that pool starts no thread until prestart or a call', async () => {
    const own = new HookPool({ threads: 1, maxQueued: 8, maxHeapMb: 64, name: 'own' });
    try {
      await writeMlpBundle(root, 'elsewhere', { 'manifest.yaml': MLP_MANIFEST + CLIENT_IO, 'model.mjs': HOOKS });
      const bundle = await loadBundle(join(root, 'elsewhere'));
      const hooks = (await ModelHooks.load(bundle, own, join(root, 'cache'), limits, pool))!;
      assert.ok(hooks.hasPreprocess && hooks.hasPostprocess);
      assert.equal(own.threadCount, 0, 'the check ran in the other pool');
      own.prestart();
      own.prestart();
      assert.equal(own.threadCount, 1, 'prestart starts one thread, once');
      // Its thread imports the module on its first call.
      const [x] = await hooks.preprocess([u8('pixels', [1, 4], [0, 255, 0, 0])], ctx());
      assert.deepEqual(x!.shape, [1, 4]);
      assert.equal(own.threadCount, 1);
    } finally {
      await own.close();
    }
  });

  test('a hooks module that does not import, or has no step for its kind, is a bundle error', async () => {
    await writeMlpBundle(root, 'broken', { 'manifest.yaml': MLP_MANIFEST, 'model.mjs': 'export const x = ;' });
    await assert.rejects(
      ModelHooks.load(await loadBundle(join(root, 'broken')), pool, join(root, 'cache'), limits),
      (e: unknown) => e instanceof ServeError && e.code === 'HLO_ERR_BUNDLE_INVALID' && /does not load/.test(e.message),
    );
    await writeMlpBundle(root, 'empty', { 'manifest.yaml': MLP_MANIFEST, 'model.mjs': 'export const x = 1;' });
    await assert.rejects(
      ModelHooks.load(await loadBundle(join(root, 'empty')), pool, join(root, 'cache'), limits),
      (e: unknown) => e instanceof ServeError && /exports neither preprocess nor postprocess/.test(e.message),
    );
  });
});
