import { test, suite, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { ServeError } from '@hloserve/common/errors';
import { findModule, loadBundle } from '../../src/bundle/bundle.js';
import { parseModuleFileName } from '../../src/bundle/module-files.js';
import { writeSafetensors } from '../../src/bundle/safetensors-writer.js';
import {
  MLP_MANIFEST,
  MLP_WEIGHTS,
  f32,
  mlpModule,
  removeDir,
  tempDir,
  tensor,
  tensorType,
  textModule,
  writeFiles,
  writeMlpBundle,
} from './fixtures.js';

let root = '';
let counter = 0;
before(async () => {
  root = await tempDir();
});
after(async () => removeDir(root));

/** A fresh directory name per case, so cases cannot see each other's files. */
const fresh = (): string => `case${++counter}`;

async function rejects(promise: Promise<unknown>, file: string, field: string | null, pattern: RegExp): Promise<void> {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(err instanceof ServeError, String(err));
    assert.equal(err.code, 'HLO_ERR_BUNDLE_INVALID');
    const prefix = field === null ? `${file}: ` : `${file}: ${field}: `;
    assert.ok(
      err.message.startsWith(prefix),
      `expected prefix ${JSON.stringify(prefix)} in ${JSON.stringify(err.message)}`,
    );
    assert.match(err.message, pattern);
    return true;
  });
}

const mlpText = (batch: number): [string[], string[]] => [
  [tensorType([batch, 4]), tensorType([4, 3]), tensorType([3])],
  [tensorType([batch, 3])],
];

suite('loadBundle: good bundles', () => {
  test('the MLP: modules, weights in argument order, signatures checked at load', async () => {
    const dir = await writeMlpBundle(root, 'mlp');
    const b = await loadBundle(dir);
    assert.equal(b.name, 'mlp');
    assert.equal(b.kind, 'model');
    assert.equal(b.dir, dir);
    assert.equal(b.notServable, null);
    assert.equal(b.hooks, null);
    assert.equal(b.reference, null);
    assert.deepEqual(b.warnings, []);
    assert.deepEqual(
      b.modules.map((m) => [m.fileName, m.batchSize, m.variant, m.format, m.signatureCheckedAt]),
      [
        ['model.b1.mlir', 1, null, 'text', 'load'],
        ['model.b4.mlir', 4, null, 'text', 'load'],
      ],
    );
    assert.equal(b.modules[1]!.signature!.parameters.length, 3);
    assert.equal(b.modules[1]!.path, join(dir, 'model.b4.mlir'));
    assert.deepEqual(b.weights!.argumentOrder, ['w', 'b']);
    assert.deepEqual(
      b.weights!.tensors.map((t) => [t.name, t.shape]),
      [
        ['w', [4, 3]],
        ['b', [3]],
      ],
    );
    assert.equal(b.weights!.byteLength, 60);
    assert.equal(findModule(b, 4)!.fileName, 'model.b4.mlir');
    assert.equal(findModule(b, 2), undefined);
  });

  test('the directory name wins over manifest name (with a warning)', async () => {
    const dir = await writeMlpBundle(root, 'renamed');
    const b = await loadBundle(dir);
    assert.equal(b.name, 'renamed');
    assert.match(b.warnings[0]!, /name: "mlp" differs from the directory name; the model is served as "renamed"/);
  });

  test('model.mlir serves any batch (dynamic batch dim)', async () => {
    const [args, results] = mlpText(-1);
    const dir = await writeMlpBundle(root, fresh(), {
      'manifest.yaml': MLP_MANIFEST.replace('batching: {compiled_batch_sizes: [1, 4]}\n', ''),
      'model.b1.mlir': null,
      'model.b4.mlir': null,
      'model.mlir': textModule(args, results),
    });
    const b = await loadBundle(dir);
    assert.deepEqual(b.manifest.compiledBatchSizes, []);
    assert.deepEqual(
      b.modules.map((m) => [m.fileName, m.batchSize]),
      [['model.mlir', 0]],
    );
    assert.equal(findModule(b, 7)!.fileName, 'model.mlir');
  });

  test('bytecode modules are recognised by magic and checked at compile', async () => {
    const bytecode = new Uint8Array([0x4d, 0x4c, 0xef, 0x52, 1, 2, 3, 0xff, 0xfe]);
    const dir = await writeMlpBundle(root, fresh(), { 'model.b1.mlir': bytecode, 'model.b4.mlir': bytecode });
    const b = await loadBundle(dir);
    assert.deepEqual(
      b.modules.map((m) => [m.format, m.signature, m.signatureCheckedAt, m.byteLength]),
      [
        ['bytecode', null, 'compile', 9],
        ['bytecode', null, 'compile', 9],
      ],
    );
  });

  test('no weights file: main takes only the inputs', async () => {
    const m = textModule([tensorType([1, 4])], [tensorType([1, 3])]);
    const m4 = textModule([tensorType([4, 4])], [tensorType([4, 3])]);
    const dir = await writeMlpBundle(root, fresh(), { 'model.b1.mlir': m, 'model.b4.mlir': m4 }, null);
    const b = await loadBundle(dir);
    assert.equal(b.weights, null);
  });

  test('unlisted weights are a warning', async () => {
    const dir = await writeMlpBundle(
      root,
      fresh(),
      {},
      {
        tensors: [...MLP_WEIGHTS, tensor('unused', 'f32', [2])],
        argumentOrder: ['w', 'b'],
      },
    );
    const b = await loadBundle(dir);
    assert.match(
      b.warnings.join('\n'),
      /weights\.safetensors: __metadata__\.argument_order: tensors "unused" are not listed/,
    );
  });

  test('hooks: client tensors allowed with model.js; model.ts recognised', async () => {
    const manifest =
      MLP_MANIFEST +
      stringify({
        client_inputs: [{ name: 'text', dtype: 'BYTES', shape: 'n' }],
        client_outputs: [{ name: 'label', dtype: 'BYTES', shape: 'n' }],
      });
    const js = await loadBundle(
      await writeMlpBundle(root, fresh(), { 'manifest.yaml': manifest, 'model.js': 'export {};\n' }),
    );
    assert.equal(js.hooks!.language, 'js');
    assert.ok(js.hooks!.path.endsWith('model.js'));
    assert.equal(js.manifest.clientInputs![0]!.dtype, 'BYTES');
    const ts = await loadBundle(await writeMlpBundle(root, fresh(), { 'model.ts': 'export {};\n' }));
    assert.equal(ts.hooks!.language, 'ts');
  });

  test('a Julia model.jl without client tensors is ignored with a warning', async () => {
    const b = await loadBundle(await writeMlpBundle(root, fresh(), { 'model.jl': 'register_model("mlp")\n' }));
    assert.match(b.warnings.join('\n'), /model\.jl: ignored; model\.jl \(Julia\) hooks are not run by hloserve/);
  });

  test('extra files are allowed', async () => {
    const b = await loadBundle(
      await writeMlpBundle(root, fresh(), { 'vocab.txt': 'a\nb\n', 'working_tree.patch': '' }),
    );
    assert.equal(b.modules.length, 2);
  });

  test('reference.safetensors is checked against the client specs', async () => {
    const dir = await writeMlpBundle(root, fresh());
    await writeSafetensors(
      join(dir, 'reference.safetensors'),
      [tensor('input.x', 'f32', [2, 4], f32([2, 4])), tensor('output.y', 'f32', [2, 3], f32([2, 3]))],
      { metadata: { batch_size: '2' } },
    );
    const b = await loadBundle(dir);
    assert.deepEqual(b.reference, {
      path: join(dir, 'reference.safetensors'),
      batchSize: 2,
      inputs: ['x'],
      outputs: ['y'],
    });
  });

  test('input_shapes variants: model.v{i}.b{N}.mlir, checked with the variant extents', async () => {
    const manifest = stringify({
      format_version: '2.0',
      executable_inputs: [{ name: 'img', dtype: 'f32', shape: 'whn', dims: { w: -1, h: -1 } }],
      executable_outputs: [{ name: 'score', dtype: 'f32', shape: 'kn', dims: { k: 2 } }],
      batching: { compiled_batch_sizes: [1, 2] },
      input_shapes: [
        { w: 8, h: 4 },
        { w: 6, h: 6 },
      ],
    });
    const files: Record<string, string> = { 'manifest.yaml': manifest };
    for (const [v, [w, h]] of [
      [0, [8, 4]],
      [1, [6, 6]],
    ] as const) {
      for (const n of [1, 2])
        files[`model.v${v}.b${n}.mlir`] = textModule([tensorType([n, h, w])], [tensorType([n, 2])]);
    }
    const dir = join(root, fresh());
    await writeFiles(dir, files);
    const b = await loadBundle(dir);
    assert.deepEqual(
      b.modules.map((m) => [m.variant, m.batchSize]),
      [
        [0, 1],
        [0, 2],
        [1, 1],
        [1, 2],
      ],
    );
    assert.equal(findModule(b, 2, 1)!.fileName, 'model.v1.b2.mlir');
    assert.match(b.notServable ?? '', /input_shapes .* not served/, 'a load is refused with the reason');

    // Swapping the variants' files must fail: v0 is w=8, h=4 -> wire [n, 4, 8].
    await writeFiles(dir, { 'model.v0.b1.mlir': textModule([tensorType([1, 6, 6])], [tensorType([1, 2])]) });
    await rejects(
      loadBundle(dir),
      join(dir, 'model.v0.b1.mlir'),
      '@main argument 0',
      /executable_inputs\[0\] "img" \(shape "whn" at batch 1, input_shapes\[0\]\): expected tensor<1x4x8xf32>, the module takes tensor<1x6x6xf32>/,
    );
  });

  test('meta bundles load with their hooks and no modules', async () => {
    const manifest = stringify({
      format_version: '2.0',
      kind: 'meta',
      meta: { calls: ['mlp'] },
      client_inputs: [{ name: 'q', dtype: 'BYTES', shape: 'n' }],
      client_outputs: [{ name: 'r', dtype: 'f32', shape: 'kn', dims: { k: 3 } }],
    });
    const dir = join(root, 'pipeline');
    await writeFiles(dir, { 'manifest.yaml': manifest, 'model.mjs': 'export {};\n' });
    const b = await loadBundle(dir);
    assert.equal(b.kind, 'meta');
    assert.equal(b.notServable, null);
    assert.match(b.hooks!.path, /model\.mjs$/);
    assert.deepEqual(b.modules, []);
    assert.deepEqual(b.manifest.metaCalls, ['mlp']);
  });
});

suite('loadBundle: module files', () => {
  test('file names', () => {
    assert.deepEqual(parseModuleFileName('model.mlir'), { fileName: 'model.mlir', variant: null, batchSize: 0 });
    assert.deepEqual(parseModuleFileName('model.b16.mlir'), {
      fileName: 'model.b16.mlir',
      variant: null,
      batchSize: 16,
    });
    assert.deepEqual(parseModuleFileName('model.v2.b8.mlir'), {
      fileName: 'model.v2.b8.mlir',
      variant: 2,
      batchSize: 8,
    });
    assert.deepEqual(parseModuleFileName('model.v0.mlir'), { fileName: 'model.v0.mlir', variant: 0, batchSize: 0 });
    for (const bad of ['model.b0.mlir', 'model.b01.mlir', 'model.bx.mlir', 'model.b8.v1.mlir', 'model.v01.mlir']) {
      assert.equal(parseModuleFileName(bad), 'malformed', bad);
    }
    assert.equal(parseModuleFileName('other.mlir'), null);
    assert.equal(parseModuleFileName('model.js'), null);
  });

  test('every compiled size needs its file', async () => {
    const dir = await writeMlpBundle(root, fresh(), { 'model.b4.mlir': null });
    await rejects(
      loadBundle(dir),
      join(dir, 'manifest.yaml'),
      'batching.compiled_batch_sizes[1]',
      /4 has no module file model\.b4\.mlir/,
    );
  });

  test('every file must be listed', async () => {
    const dir = await writeMlpBundle(root, fresh(), { 'model.b8.mlir': mlpModule(8) });
    await rejects(
      loadBundle(dir),
      join(dir, 'model.b8.mlir'),
      null,
      /batch size 8 is not listed in .*batching\.compiled_batch_sizes \[1, 4\]/,
    );
  });

  test('empty compiled_batch_sizes needs model.mlir', async () => {
    const dir = await writeMlpBundle(root, fresh(), {
      'manifest.yaml': MLP_MANIFEST.replace('[1, 4]', '[]'),
      'model.b1.mlir': null,
      'model.b4.mlir': null,
    });
    await rejects(
      loadBundle(dir),
      join(dir, 'manifest.yaml'),
      'batching.compiled_batch_sizes',
      /is empty, so the bundle needs model\.mlir/,
    );
  });

  test('per-size files without compiled_batch_sizes', async () => {
    const dir = await writeMlpBundle(root, fresh(), {
      'manifest.yaml': MLP_MANIFEST.replace('[1, 4]', '[]'),
      'model.mlir': mlpModule(1),
      'model.b4.mlir': null,
    });
    await rejects(
      loadBundle(dir),
      join(dir, 'model.b1.mlir'),
      null,
      /needs batching\.compiled_batch_sizes .* which lists none/,
    );
  });

  test('model.mlir cannot be combined with compiled sizes', async () => {
    const dir = await writeMlpBundle(root, fresh(), { 'model.mlir': mlpModule(1) });
    await rejects(
      loadBundle(dir),
      join(dir, 'model.mlir'),
      null,
      /any-batch module cannot be combined with batching\.compiled_batch_sizes \[1, 4\]/,
    );
  });

  test('malformed module names', async () => {
    const dir = await writeMlpBundle(root, fresh(), { 'model.b01.mlir': mlpModule(1) });
    await rejects(loadBundle(dir), join(dir, 'model.b01.mlir'), null, /not a valid module file name/);
  });

  test('variant files without input_shapes', async () => {
    const dir = await writeMlpBundle(root, fresh(), { 'model.v0.b1.mlir': mlpModule(1) });
    await rejects(loadBundle(dir), join(dir, 'model.v0.b1.mlir'), null, /needs input_shapes in the manifest/);
  });

  test('with input_shapes: plain names refused, out-of-range variant refused, missing variant reported', async () => {
    const manifest = stringify({
      format_version: '2.0',
      executable_inputs: [{ name: 'x', dtype: 'f32', shape: 'fn', dims: { f: -1 } }],
      executable_outputs: [{ name: 'y', dtype: 'f32', shape: 'n' }],
      batching: { compiled_batch_sizes: [1] },
      input_shapes: [{ f: 2 }, { f: 3 }],
    });
    const m = (f: number): string => textModule([tensorType([1, f])], [tensorType([1])]);
    const plain = join(root, fresh());
    await writeFiles(plain, { 'manifest.yaml': manifest, 'model.b1.mlir': m(2) });
    await rejects(
      loadBundle(plain),
      join(plain, 'model.b1.mlir'),
      null,
      /lists 2 input_shapes, so modules must be named model\.v\{i\}/,
    );
    const extra = join(root, fresh());
    await writeFiles(extra, {
      'manifest.yaml': manifest,
      'model.v0.b1.mlir': m(2),
      'model.v1.b1.mlir': m(3),
      'model.v2.b1.mlir': m(4),
    });
    await rejects(
      loadBundle(extra),
      join(extra, 'model.v2.b1.mlir'),
      null,
      /variant 2 does not exist; input_shapes has 2 entries/,
    );
    const missing = join(root, fresh());
    await writeFiles(missing, { 'manifest.yaml': manifest, 'model.v0.b1.mlir': m(2) });
    await rejects(
      loadBundle(missing),
      join(missing, 'manifest.yaml'),
      'batching.compiled_batch_sizes[0]',
      /1 has no module file model\.v1\.b1\.mlir \(input_shapes\[1\]\)/,
    );
  });

  test('text that is not a module', async () => {
    const dir = await writeMlpBundle(root, fresh(), { 'model.b1.mlir': 'hello\n' });
    await rejects(
      loadBundle(dir),
      join(dir, 'model.b1.mlir'),
      null,
      /neither MLIR bytecode .* nor MLIR text with a func\.func @main/,
    );
  });

  test('a main whose types cannot be read', async () => {
    const dir = await writeMlpBundle(root, fresh(), {
      'model.b1.mlir': 'func.func public @main(%arg0: tuple<tensor<1xf32>>) -> tensor<1xf32> {\n}\n',
    });
    await rejects(loadBundle(dir), join(dir, 'model.b1.mlir'), '@main', /cannot read its signature/);
  });

  // The signature is read a 1 MiB slice at a time (text-module-signature.ts); these cross slices.
  const privateFunctions = (bytes: number): string => {
    const f = 'func.func private @f(%a: tensor<f32>) -> tensor<f32> {\n  return %a : tensor<f32>\n}\n';
    return f.repeat(Math.ceil(bytes / f.length));
  };

  test('a text module whose @main follows megabytes of other functions', async () => {
    const text = privateFunctions(2.5 * 2 ** 20) + mlpModule(1);
    const dir = await writeMlpBundle(root, fresh(), { 'model.b1.mlir': text });
    const b = await loadBundle(dir);
    assert.deepEqual(
      b.modules[0]!.signature!.parameters.map((p) => p.shape),
      [[1, 4], [4, 3], [3]],
    );
    assert.equal(b.modules[0]!.byteLength, Buffer.byteLength(text));
  });

  test('a text module with megabytes of constants after @main', async () => {
    const constant = `    %c = stablehlo.constant dense<"0x${'0000803F'.repeat(2 ** 19)}"> : tensor<${2 ** 19}xf32>\n`;
    const lines = mlpModule(1).split('\n');
    lines.splice(2, 0, constant);
    const dir = await writeMlpBundle(root, fresh(), { 'model.b1.mlir': lines.join('\n') });
    const b = await loadBundle(dir);
    assert.deepEqual(b.modules[0]!.signature!.results, [{ dtype: 'f32', shape: [1, 3] }]);
  });

  test('megabytes of text and no @main', async () => {
    const dir = await writeMlpBundle(root, fresh(), { 'model.b1.mlir': privateFunctions(1.5 * 2 ** 20) });
    await rejects(
      loadBundle(dir),
      join(dir, 'model.b1.mlir'),
      null,
      /neither MLIR bytecode .* nor MLIR text with a func\.func @main/,
    );
  });
});

suite('loadBundle: signature against manifest and weights', () => {
  const withModule = async (args: string[], results: string[]): Promise<string> =>
    writeMlpBundle(root, fresh(), { 'model.b1.mlir': textModule(args, results) });
  const [args, results] = mlpText(1);

  test('arity: an extra leading argument', async () => {
    const dir = await withModule(['tensor<2xui64>', ...args], results);
    await rejects(
      loadBundle(dir),
      join(dir, 'model.b1.mlir'),
      '@main',
      /takes 4 arguments but the bundle supplies 3: 1 executable_inputs \+ 2 weights in argument_order; one extra leading argument/,
    );
  });

  test('arity: a missing weight', async () => {
    const dir = await withModule(args.slice(0, 2), results);
    await rejects(loadBundle(dir), join(dir, 'model.b1.mlir'), '@main', /takes 2 arguments but the bundle supplies 3/);
  });

  test('input shape at the file batch size', async () => {
    const dir = await withModule([tensorType([4, 4]), ...args.slice(1)], results);
    await rejects(
      loadBundle(dir),
      join(dir, 'model.b1.mlir'),
      '@main argument 0',
      /executable_inputs\[0\] "x" \(shape "fn" at batch 1\): expected tensor<1x4xf32>, the module takes tensor<4x4xf32>/,
    );
  });

  test('input dtype', async () => {
    const dir = await withModule([tensorType([1, 4], 'f16'), ...args.slice(1)], results);
    await rejects(
      loadBundle(dir),
      join(dir, 'model.b1.mlir'),
      '@main argument 0',
      /expected tensor<1x4xf32>, the module takes tensor<1x4xf16>/,
    );
  });

  test('input rank', async () => {
    const dir = await withModule([tensorType([1, 4, 1]), ...args.slice(1)], results);
    await rejects(loadBundle(dir), join(dir, 'model.b1.mlir'), '@main argument 0', /takes tensor<1x4x1xf32>/);
  });

  test('weight shape (the stored XLA shape, in argument order)', async () => {
    const dir = await withModule([args[0]!, tensorType([3, 4]), args[2]!], results);
    await rejects(
      loadBundle(dir),
      join(dir, 'model.b1.mlir'),
      '@main argument 1',
      /weight "w" \(.*weights\.safetensors __metadata__\.argument_order\[0\]\): expected tensor<4x3xf32>, the module takes tensor<3x4xf32>/,
    );
  });

  test('weights in the wrong argument order', async () => {
    const dir = await writeMlpBundle(root, fresh(), {}, { tensors: MLP_WEIGHTS, argumentOrder: ['b', 'w'] });
    await rejects(
      loadBundle(dir),
      join(dir, 'model.b1.mlir'),
      '@main argument 1',
      /weight "b" .* expected tensor<3xf32>, the module takes tensor<4x3xf32>/,
    );
  });

  test('weight dtype', async () => {
    const dir = await writeMlpBundle(
      root,
      fresh(),
      {},
      {
        tensors: [tensor('w', 'f64', [4, 3]), MLP_WEIGHTS[1]!],
        argumentOrder: ['w', 'b'],
      },
    );
    await rejects(
      loadBundle(dir),
      join(dir, 'model.b1.mlir'),
      '@main argument 1',
      /expected tensor<4x3xf64>, the module takes tensor<4x3xf32>/,
    );
  });

  test('result shape', async () => {
    const dir = await withModule(args, [tensorType([1, 2])]);
    await rejects(
      loadBundle(dir),
      join(dir, 'model.b1.mlir'),
      '@main result 0',
      /executable_outputs\[0\] "y" \(shape "kn" at batch 1\): expected tensor<1x3xf32>, the module returns tensor<1x2xf32>/,
    );
  });

  test('result count', async () => {
    const dir = await withModule(args, [...results, tensorType([1])]);
    await rejects(
      loadBundle(dir),
      join(dir, 'model.b1.mlir'),
      '@main',
      /returns 2 results but .*executable_outputs lists 1/,
    );
  });

  test('dynamic module dims match anything', async () => {
    const dir = await withModule([tensorType([-1, 4]), ...args.slice(1)], [tensorType([-1, -1])]);
    const b = await loadBundle(dir);
    assert.equal(b.modules[0]!.signature!.parameters[0]!.shape[0], -1);
  });
});

suite('loadBundle: weights and bundle files', () => {
  test('manifest missing', async () => {
    const dir = join(root, fresh());
    await writeFiles(dir, { 'model.mlir': 'x' });
    await rejects(loadBundle(dir), join(dir, 'manifest.yaml'), null, /missing \(every bundle needs a manifest\.yaml\)/);
  });

  test('directory missing', async () => {
    const dir = join(root, 'does-not-exist');
    await rejects(loadBundle(dir), dir, null, /cannot read bundle directory/);
  });

  test('weights without argument_order', async () => {
    const dir = await writeMlpBundle(root, fresh(), {}, { tensors: MLP_WEIGHTS });
    await rejects(
      loadBundle(dir),
      join(dir, 'weights.safetensors'),
      '__metadata__.argument_order',
      /missing; the file holds 2 tensors/,
    );
  });

  test('argument_order names a missing tensor', async () => {
    const dir = await writeMlpBundle(root, fresh(), {}, { tensors: MLP_WEIGHTS, argumentOrder: ['w', 'bias'] });
    await rejects(
      loadBundle(dir),
      join(dir, 'weights.safetensors'),
      '__metadata__.argument_order[1]',
      /names tensor "bias", which is not in the file/,
    );
  });

  test('corrupt weights file', async () => {
    const dir = await writeMlpBundle(root, fresh(), { 'weights.safetensors': new Uint8Array([1, 2, 3]) }, null);
    await rejects(loadBundle(dir), join(dir, 'weights.safetensors'), null, /too short for a safetensors file/);
  });

  test('client tensors without hooks', async () => {
    const manifest = MLP_MANIFEST + stringify({ client_outputs: [{ name: 'label', dtype: 'BYTES', shape: 'n' }] });
    const dir = await writeMlpBundle(root, fresh(), { 'manifest.yaml': manifest });
    await rejects(
      loadBundle(dir),
      join(dir, 'manifest.yaml'),
      'client_outputs',
      /only allowed when the bundle has hooks \(model\.js, model\.mjs, model\.ts\)/,
    );
  });

  test('client tensors with only Julia hooks', async () => {
    const manifest = MLP_MANIFEST + stringify({ client_inputs: [{ name: 't', dtype: 'BYTES', shape: 'n' }] });
    const dir = await writeMlpBundle(root, fresh(), { 'manifest.yaml': manifest, 'model.jl': '' });
    await rejects(
      loadBundle(dir),
      join(dir, 'manifest.yaml'),
      'client_inputs',
      /model\.jl \(Julia\) hooks are not run by hloserve/,
    );
  });

  test('two hooks files', async () => {
    const dir = await writeMlpBundle(root, fresh(), { 'model.js': '', 'model.mjs': '' });
    await rejects(loadBundle(dir), dir, null, /more than one hooks file \(model\.js, model\.mjs\)/);
  });

  test('reference: unknown tensor name', async () => {
    const dir = await writeMlpBundle(root, fresh());
    await writeSafetensors(join(dir, 'reference.safetensors'), [tensor('input.z', 'f32', [1, 4])]);
    await rejects(
      loadBundle(dir),
      join(dir, 'reference.safetensors'),
      'tensors["input.z"]',
      /no executable input named "z" \(have: x\)/,
    );
  });

  test('reference: not input./output.', async () => {
    const dir = await writeMlpBundle(root, fresh());
    await writeSafetensors(join(dir, 'reference.safetensors'), [tensor('x', 'f32', [1, 4])]);
    await rejects(
      loadBundle(dir),
      join(dir, 'reference.safetensors'),
      'tensors["x"]',
      /named input\.<name> or output\.<name>/,
    );
  });

  test('reference: wrong shape for its batch size', async () => {
    const dir = await writeMlpBundle(root, fresh());
    await writeSafetensors(join(dir, 'reference.safetensors'), [tensor('output.y', 'f32', [3, 3])], {
      metadata: { batch_size: '2' },
    });
    await rejects(
      loadBundle(dir),
      join(dir, 'reference.safetensors'),
      'tensors["output.y"]',
      /f32 \[3,3\] does not fit the manifest's f32 wire shape \[2,3\]/,
    );
  });

  test('reference: bad batch_size', async () => {
    const dir = await writeMlpBundle(root, fresh());
    await writeSafetensors(join(dir, 'reference.safetensors'), [], { metadata: { batch_size: 'two' } });
    await rejects(
      loadBundle(dir),
      join(dir, 'reference.safetensors'),
      '__metadata__.batch_size',
      /expected a positive integer, got "two"/,
    );
  });
});

suite('loadBundle: meta', () => {
  const META = (calls: string[]): string =>
    stringify({
      format_version: '2.0',
      kind: 'meta',
      meta: { calls },
      client_inputs: [{ name: 'q', dtype: 'f32', shape: 'n' }],
      client_outputs: [{ name: 'r', dtype: 'f32', shape: 'n' }],
    });

  test('needs hooks', async () => {
    const dir = join(root, fresh());
    await writeFiles(dir, { 'manifest.yaml': META([]), 'model.jl': '' });
    await rejects(loadBundle(dir), dir, null, /kind: meta needs a hooks file .*model\.jl \(Julia\) hooks are not run/);
  });

  test('cannot call itself', async () => {
    const dir = join(root, 'selfish');
    await writeFiles(dir, { 'manifest.yaml': META(['a', 'selfish']), 'model.js': '' });
    await rejects(loadBundle(dir), join(dir, 'manifest.yaml'), 'meta.calls[1]', /"selfish" is this bundle/);
  });

  test('has no modules', async () => {
    const dir = join(root, fresh());
    await writeFiles(dir, { 'manifest.yaml': META([]), 'model.js': '', 'model.mlir': 'x' });
    await rejects(
      loadBundle(dir),
      join(dir, 'model.mlir'),
      null,
      /a meta bundle \(kind: meta\) has no StableHLO module/,
    );
  });
});
