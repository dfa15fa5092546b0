import { test, suite } from 'node:test';
import assert from 'node:assert/strict';
import { stringify } from 'yaml';
import { ServeError } from '@hloserve/common/errors';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  parseManifest,
  readManifest,
  clientInputSpecs,
  clientOutputSpecs,
  type Manifest,
} from '../../src/bundle/manifest.js';
import { MLP_MANIFEST } from './fixtures.js';

const FILE = 'repo/m/manifest.yaml';

const X = { name: 'x', dtype: 'f32', shape: 'fn', dims: { f: 4 } };
const Y = { name: 'y', dtype: 'f32', shape: 'kn', dims: { k: 3 } };

function doc(fields: Record<string, unknown> = {}): string {
  const base: Record<string, unknown> = {
    format_version: '2.0',
    name: 'm',
    executable_inputs: [X],
    executable_outputs: [Y],
    batching: { compiled_batch_sizes: [1, 4] },
  };
  for (const [k, v] of Object.entries(fields)) {
    if (v === undefined) delete base[k];
    else base[k] = v;
  }
  return stringify(base);
}

function parse(fields: Record<string, unknown> = {}): Manifest {
  return parseManifest(doc(fields), FILE);
}

/** Asserts a load error whose message starts with `<file>: <field>: ` and matches `pattern`. */
function invalid(text: string, field: string | null, pattern: RegExp): void {
  assert.throws(
    () => parseManifest(text, FILE),
    (err: unknown) => {
      assert.ok(err instanceof ServeError, String(err));
      assert.equal(err.code, 'HLO_ERR_BUNDLE_INVALID');
      const prefix = field === null ? `${FILE}: ` : `${FILE}: ${field}: `;
      assert.ok(
        err.message.startsWith(prefix),
        `expected prefix ${JSON.stringify(prefix)} in ${JSON.stringify(err.message)}`,
      );
      assert.match(err.message, pattern);
      return true;
    },
  );
}

const bad = (fields: Record<string, unknown>, field: string | null, pattern: RegExp): void =>
  invalid(doc(fields), field, pattern);

suite('manifest: good cases', () => {
  test('the MLP fixture parses', () => {
    const m = parseManifest(MLP_MANIFEST, FILE);
    assert.equal(m.formatVersion, '2.0');
    assert.equal(m.kind, 'model');
    assert.equal(m.name, 'mlp');
    assert.equal(m.description, 'two-layer test model');
    assert.deepEqual(m.compiledBatchSizes, [1, 4]);
    assert.equal(m.batched, true);
    assert.deepEqual(m.provenance, { exporter: 'test' });
    assert.equal(m.executableInputs[0]!.dtype, 'f32');
    assert.deepEqual(m.executableInputs[0]!.wireShape(8), [8, 4]);
    assert.deepEqual(m.executableOutputs[0]!.wireShape(), [-1, 3]);
    assert.equal(m.clientInputs, null);
    assert.equal(clientInputSpecs(m), m.executableInputs);
    assert.equal(clientOutputSpecs(m), m.executableOutputs);
    assert.deepEqual(m.warnings, []);
  });

  test('named axes: cwhn is an NHWC image on the wire', () => {
    const m = parse({ executable_inputs: [{ name: 'img', dtype: 'u8', shape: 'cwhn', dims: { c: 3, w: 32, h: 24 } }] });
    const s = m.executableInputs[0]!;
    assert.equal(s.letters, 'cwhn');
    assert.equal(s.wireLetters, 'nhwc');
    assert.equal(s.rank, 4);
    assert.equal(s.batchAxisManifest, 3);
    assert.equal(s.wireBatchAxis, 0);
    assert.deepEqual(s.wireShape(2), [2, 24, 32, 3]);
    assert.deepEqual(s.wireShape(), [-1, 24, 32, 3]);
    assert.deepEqual(s.fixedExtents, [null, 24, 32, 3]);
    assert.deepEqual(s.dims, { c: 3, w: 32, h: 24 });
  });

  test('batch letter b, not last in manifest order', () => {
    const m = parse({ executable_inputs: [{ name: 'x', dtype: 'i32', shape: 'bt', dims: { t: 7 } }] });
    const s = m.executableInputs[0]!;
    assert.equal(s.batchAxisManifest, 0);
    assert.equal(s.wireBatchAxis, 1);
    assert.deepEqual(s.wireShape(5), [7, 5]);
  });

  test('unbatched model, scalar and variable outputs', () => {
    const m = parse({
      executable_inputs: [{ name: 'x', dtype: 'f64', shape: 'ij', dims: { i: 2, j: 3 } }],
      executable_outputs: [
        { name: 's', dtype: 'f64', shape: '' },
        { name: 'v', dtype: 'f64', shape: 'q', dims: { q: -1 } },
      ],
      batching: undefined,
    });
    assert.equal(m.batched, false);
    assert.deepEqual(m.compiledBatchSizes, []);
    assert.equal(m.executableInputs[0]!.wireBatchAxis, null);
    assert.deepEqual(m.executableOutputs[0]!.wireShape(), []);
    assert.deepEqual(m.executableOutputs[1]!.wireShape(3), [-1]);
    assert.deepEqual(m.executableOutputs[1]!.variableLetters, ['q']);
    assert.deepEqual(m.executableOutputs[1]!.fixedExtents, [null]);
  });

  test('format_version "2" and unquoted 2.0 are accepted', () => {
    assert.equal(parse({ format_version: '2' }).formatVersion, '2.0');
    assert.equal(
      parseManifest(doc().replace(`format_version: "2.0"`, 'format_version: 2.0'), FILE).formatVersion,
      '2.0',
    );
  });

  test('compiled_batch_sizes are sorted; [1] is fine without a batch axis', () => {
    assert.deepEqual(parse({ batching: { compiled_batch_sizes: [8, 1, 4] } }).compiledBatchSizes, [1, 4, 8]);
    const m = parse({
      executable_inputs: [{ name: 'x', dtype: 'f32', shape: 'f', dims: { f: 4 } }],
      batching: { compiled_batch_sizes: [1] },
    });
    assert.equal(m.batched, false);
  });

  test('unknown keys are warnings naming file and path, not errors', () => {
    const m = parse({
      extra: 1,
      batching: { compiled_batch_sizes: [1], batch_dim: 1, window: 3 },
      executable_inputs: [{ ...X, layout: 'x' }],
    });
    assert.deepEqual(m.warnings, [
      `${FILE}: extra: unknown key, ignored`,
      `${FILE}: executable_inputs[0].layout: unknown key, ignored`,
      `${FILE}: batching.window: unknown key, ignored`,
    ]);
  });

  test('client tensors (BYTES allowed) parse; the loader decides if they are allowed', () => {
    const m = parse({
      client_inputs: [{ name: 'text', dtype: 'BYTES', shape: 'n' }],
      client_outputs: [{ name: 'label', dtype: 'BYTES', shape: 'n' }],
    });
    assert.equal(m.clientInputs![0]!.dtype, 'BYTES');
    assert.deepEqual(m.clientInputs![0]!.wireShape(3), [3]);
    assert.equal(clientInputSpecs(m), m.clientInputs);
  });

  test('input_shapes: variants keyed in (input, axis) order, letters shared across inputs', () => {
    const m = parse({
      executable_inputs: [
        { name: 'img', dtype: 'f32', shape: 'whcn', dims: { w: -1, h: -1, c: 3 } },
        { name: 'mask', dtype: 'f32', shape: 'whn', dims: { w: -1, h: -1 } },
      ],
      input_shapes: [
        { w: 1024, h: 1024 },
        { h: 720, w: 1448 },
      ],
    });
    assert.deepEqual(
      m.variableAxes.map((a) => `${a.input}.${a.letter}@${a.manifestAxis}`),
      ['img.w@0', 'img.h@1', 'mask.w@0', 'mask.h@1'],
    );
    assert.equal(m.inputShapes.length, 2);
    assert.deepEqual(m.inputShapes[1]!.key, [1448, 720, 1448, 720]);
    assert.deepEqual(m.inputShapes[1]!.extents, { w: 1448, h: 720 });
    assert.deepEqual(m.executableInputs[0]!.wireShape(2, m.inputShapes[1]!.extents), [2, 3, 720, 1448]);
    assert.deepEqual(m.executableInputs[0]!.wireShape(2), [2, 3, -1, -1]);
  });

  test('kind: meta parses with calls (possibly empty) and no executable', () => {
    const m = parse({
      kind: 'meta',
      meta: { calls: ['a', 'b'] },
      executable_inputs: undefined,
      executable_outputs: undefined,
      batching: undefined,
      client_inputs: [{ name: 'q', dtype: 'BYTES', shape: 'n' }],
      client_outputs: [{ name: 'r', dtype: 'f32', shape: 'kn', dims: { k: 2 } }],
    });
    assert.equal(m.kind, 'meta');
    assert.deepEqual(m.metaCalls, ['a', 'b']);
    assert.deepEqual(m.executableInputs, []);
    const empty = parse({
      kind: 'meta',
      meta: { calls: [] },
      executable_inputs: undefined,
      executable_outputs: undefined,
      client_inputs: [{ name: 'q', dtype: 'f32', shape: 'n' }],
      client_outputs: [{ name: 'r', dtype: 'f32', shape: 'n' }],
    });
    assert.deepEqual(empty.metaCalls, []);
  });
});

suite('manifest: document', () => {
  test('invalid YAML names the file and line', () => invalid('a: [1, 2\nb: 3\n', null, /invalid YAML: .*line/));
  test('duplicate keys are refused', () =>
    invalid('format_version: "2.0"\nformat_version: "2"\n', null, /invalid YAML: Map keys must be unique/));
  test('top level must be a mapping', () =>
    invalid('- 1\n- 2\n', null, /expected a YAML mapping at the top level, got a list/));
  test('format_version missing', () => bad({ format_version: undefined }, 'format_version', /missing; expected "2.0"/));
  test('format_version unsupported', () =>
    bad({ format_version: '1.0' }, 'format_version', /unsupported version "1.0"/));
  test('name must be a string', () => bad({ name: 3 }, 'name', /expected a string, got 3/));
  test('description must be a string', () =>
    bad({ description: ['a'] }, 'description', /expected a string, got a list/));
  test('kind must be model or meta', () =>
    bad({ kind: 'ensemble' }, 'kind', /expected "model" or "meta", got "ensemble"/));
  test('meta only with kind: meta', () => bad({ meta: { calls: [] } }, 'meta', /only allowed with kind: meta/));
});

suite('manifest: sections', () => {
  test('executable_inputs missing', () => bad({ executable_inputs: undefined }, 'executable_inputs', /missing/));
  test('executable_outputs missing', () => bad({ executable_outputs: undefined }, 'executable_outputs', /missing/));
  test('executable_outputs empty', () => bad({ executable_outputs: [] }, 'executable_outputs', /at least one/));
  test('a section must be a list', () =>
    bad({ executable_inputs: { x: 1 } }, 'executable_inputs', /expected a list of tensors, got a mapping/));
  test('an entry must be a mapping', () =>
    bad({ executable_inputs: ['x'] }, 'executable_inputs[0]', /expected a mapping/));
  test('name required', () =>
    bad(
      { executable_inputs: [{ ...X, name: undefined }] },
      'executable_inputs[0].name',
      /non-empty string, got nothing/,
    ));
  test('name non-empty', () =>
    bad({ executable_outputs: [{ ...Y, name: '' }] }, 'executable_outputs[0].name', /non-empty string, got ""/));
  test('duplicate names in a section', () =>
    bad(
      { executable_outputs: [Y, { ...Y }] },
      'executable_outputs[1].name',
      /duplicate tensor name "y" \(also executable_outputs\[0\]\)/,
    ));
  test('same name in different sections is fine', () => {
    assert.equal(parse({ executable_outputs: [{ ...Y, name: 'x' }] }).executableOutputs[0]!.name, 'x');
  });
  test('duplicate client names', () =>
    bad(
      {
        client_inputs: [
          { name: 'a', dtype: 'f32', shape: 'n' },
          { name: 'a', dtype: 'f32', shape: 'n' },
        ],
      },
      'client_inputs[1].name',
      /duplicate tensor name "a"/,
    ));
});

suite('manifest: dtypes', () => {
  test('unknown dtype', () =>
    bad({ executable_inputs: [{ ...X, dtype: 'float32' }] }, 'executable_inputs[0].dtype', /unknown dtype "float32"/));
  test('wire name hint', () =>
    bad({ executable_inputs: [{ ...X, dtype: 'FP32' }] }, 'executable_inputs[0].dtype', /did you mean "f32"/));
  test('FP8 is unsupported on executable tensors', () =>
    bad(
      { executable_outputs: [{ ...Y, dtype: 'f8_e4m3' }] },
      'executable_outputs[0].dtype',
      /dtype f8_e4m3 is not supported/,
    ));
  test('FP8 is unsupported on client tensors', () =>
    bad({ client_outputs: [{ ...Y, dtype: 'f8_e5m2' }] }, 'client_outputs[0].dtype', /dtype f8_e5m2 is not supported/));
  test('BYTES is refused on executable tensors', () =>
    bad(
      { executable_inputs: [{ ...X, dtype: 'BYTES' }] },
      'executable_inputs[0].dtype',
      /BYTES is only allowed on client_inputs/,
    ));
  test('dtype missing', () =>
    bad({ executable_inputs: [{ ...X, dtype: undefined }] }, 'executable_inputs[0].dtype', /got nothing/));
});

suite('manifest: shape strings and dims', () => {
  const input = (over: Record<string, unknown>): Record<string, unknown> => ({
    executable_inputs: [{ ...X, ...over }],
  });
  test('shape must be a string', () =>
    bad(input({ shape: ['f', 'n'] }), 'executable_inputs[0].shape', /expected a string of axis letters/));
  test('shape missing', () => bad(input({ shape: undefined }), 'executable_inputs[0].shape', /got nothing/));
  test('shape letters only', () =>
    bad(input({ shape: 'f1n' }), 'executable_inputs[0].shape', /"1" is not an ASCII letter/));
  test('shape: non-ASCII letter', () =>
    bad(input({ shape: 'fén' }), 'executable_inputs[0].shape', /"é" is not an ASCII letter/));
  test('shape letters unique', () =>
    bad(input({ shape: 'ffn' }), 'executable_inputs[0].shape', /letter "f" appears twice/));
  test('at most one batch axis', () =>
    bad(input({ shape: 'fnb' }), 'executable_inputs[0].shape', /more than one batch axis \("n" and "b"\)/));
  test('dims must be a mapping', () =>
    bad(input({ dims: [4] }), 'executable_inputs[0].dims', /expected a mapping of letter to extent, got a list/));
  test('dims for every non-batch letter', () =>
    bad(input({ dims: {} }), 'executable_inputs[0].dims.f', /missing; shape "fn" uses "f"/));
  test('dims absent entirely', () => bad(input({ dims: undefined }), 'executable_inputs[0].dims.f', /missing/));
  test('dims value must be an integer', () =>
    bad(input({ dims: { f: 'abc' } }), 'executable_inputs[0].dims.f', /expected an integer > 0 or -1, got "abc"/));
  test('dims value 0', () =>
    bad(input({ dims: { f: 0 } }), 'executable_inputs[0].dims.f', /expected an integer > 0 or -1, got 0/));
  test('dims value -2', () => bad(input({ dims: { f: -2 } }), 'executable_inputs[0].dims.f', /got -2/));
  test('dims value 1.5', () => bad(input({ dims: { f: 1.5 } }), 'executable_inputs[0].dims.f', /got 1.5/));
  test('dims key must be in the shape', () =>
    bad(input({ dims: { f: 4, g: 2 } }), 'executable_inputs[0].dims.g', /"g" is not a letter of shape "fn"/));
  test('dims key may not be n', () =>
    bad(input({ dims: { f: 4, n: 2 } }), 'executable_inputs[0].dims.n', /"n" is the batch axis/));
  test('dims key may not be b', () =>
    bad(input({ shape: 'fb', dims: { f: 4, b: 2 } }), 'executable_inputs[0].dims.b', /"b" is the batch axis/));
  test('rules apply to client tensors too', () =>
    bad(
      { client_outputs: [{ name: 'p', dtype: 'f32', shape: 'kn', dims: { k: 'x' } }] },
      'client_outputs[0].dims.k',
      /got "x"/,
    ));
});

suite('manifest: batching', () => {
  test('batch axis is all or nothing across executable inputs', () =>
    bad(
      { executable_inputs: [X, { name: 'bias', dtype: 'f32', shape: 'f', dims: { f: 4 } }] },
      'executable_inputs[1].shape',
      /"f" has no batch axis but executable_inputs\[0\] \("x"\) does/,
    ));
  test('outputs need not be batched', () => {
    assert.equal(
      parse({ executable_outputs: [{ name: 's', dtype: 'f32', shape: 'k', dims: { k: 1 } }] }).batched,
      true,
    );
  });
  test('batching must be a mapping', () => bad({ batching: [1] }, 'batching', /expected a mapping, got a list/));
  test('compiled_batch_sizes must be a list', () =>
    bad(
      { batching: { compiled_batch_sizes: 4 } },
      'batching.compiled_batch_sizes',
      /expected a list of positive integers, got 4/,
    ));
  test('compiled_batch_sizes: zero', () =>
    bad(
      { batching: { compiled_batch_sizes: [1, 0] } },
      'batching.compiled_batch_sizes[1]',
      /expected a positive integer, got 0/,
    ));
  test('compiled_batch_sizes: not a number', () =>
    bad({ batching: { compiled_batch_sizes: ['8'] } }, 'batching.compiled_batch_sizes[0]', /got "8"/));
  test('compiled_batch_sizes: fraction', () =>
    bad({ batching: { compiled_batch_sizes: [2.5] } }, 'batching.compiled_batch_sizes[0]', /got 2.5/));
  test('compiled_batch_sizes: duplicate', () =>
    bad({ batching: { compiled_batch_sizes: [1, 4, 1] } }, 'batching.compiled_batch_sizes[2]', /1 is listed twice/));
  test('compiled_batch_sizes need a batch axis', () =>
    bad(
      { executable_inputs: [{ name: 'x', dtype: 'f32', shape: 'f', dims: { f: 4 } }] },
      'batching.compiled_batch_sizes',
      /\[1, 4\] needs a batch axis/,
    ));
});

suite('manifest: input_shapes', () => {
  const VAR = { executable_inputs: [{ name: 'img', dtype: 'f32', shape: 'whn', dims: { w: -1, h: 8 } }] };
  test('required when an executable input has a -1 dim', () =>
    bad(VAR, 'input_shapes', /missing; executable_inputs\[0\].dims.w is -1/));
  test('forbidden without variable dims', () =>
    bad({ input_shapes: [{ w: 2 }] }, 'input_shapes', /only allowed when some executable input has a variable/));
  test('variable output dims do not need input_shapes', () => {
    assert.deepEqual(parse({ executable_outputs: [{ ...Y, dims: { k: -1 } }] }).inputShapes, []);
  });
  test('must be a list', () => bad({ ...VAR, input_shapes: { w: 2 } }, 'input_shapes', /expected a list of mappings/));
  test('must not be empty', () => bad({ ...VAR, input_shapes: [] }, 'input_shapes', /empty/));
  test('entry must be a mapping', () => bad({ ...VAR, input_shapes: [4] }, 'input_shapes[0]', /expected a mapping/));
  test('entry covers only variable letters', () =>
    bad({ ...VAR, input_shapes: [{ w: 4, h: 8 }] }, 'input_shapes[0].h', /"h" is not a variable axis/));
  test('entry covers every variable letter', () =>
    bad({ ...VAR, input_shapes: [{ w: 4 }, {}] }, 'input_shapes[1].w', /missing/));
  test('extent must be positive', () =>
    bad({ ...VAR, input_shapes: [{ w: -1 }] }, 'input_shapes[0].w', /expected a positive integer, got -1/));
  test('entries unique', () =>
    bad({ ...VAR, input_shapes: [{ w: 4 }, { w: 4 }] }, 'input_shapes[1]', /same extents as input_shapes\[0\]/));
});

suite('manifest: meta', () => {
  const META = {
    kind: 'meta',
    meta: { calls: ['a'] },
    executable_inputs: undefined,
    executable_outputs: undefined,
    batching: undefined,
    client_inputs: [{ name: 'q', dtype: 'f32', shape: 'n' }],
    client_outputs: [{ name: 'r', dtype: 'f32', shape: 'n' }],
  };
  test('meta block required', () => bad({ ...META, meta: undefined }, 'meta', /missing; kind: meta needs meta/));
  test('meta.calls must be a list', () =>
    bad({ ...META, meta: { calls: 'a' } }, 'meta.calls', /expected a list of model names/));
  test('meta.calls entries are names', () =>
    bad({ ...META, meta: { calls: ['a', 3] } }, 'meta.calls[1]', /expected a model name, got 3/));
  test('meta.calls unique', () =>
    bad({ ...META, meta: { calls: ['a', 'a'] } }, 'meta.calls[1]', /"a" is listed twice/));
  test('client_inputs required', () => bad({ ...META, client_inputs: undefined }, 'client_inputs', /missing or empty/));
  test('client_outputs required', () => bad({ ...META, client_outputs: [] }, 'client_outputs', /missing or empty/));
  test('input_shapes forbidden', () =>
    bad({ ...META, input_shapes: [{ w: 1 }] }, 'input_shapes', /not allowed with kind: meta/));
});

suite('readManifest: a manifest read again with the same text is not parsed again', () => {
  test('same text: the same immutable Manifest; new text: a new one; a broken one fails every time', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'manifest-memo-'));
    try {
      const path = join(dir, 'manifest.yaml');
      await writeFile(path, MLP_MANIFEST);
      const a = await readManifest(path);
      assert.equal(await readManifest(path), a);
      await writeFile(path, `${MLP_MANIFEST}\n# edited\n`);
      const b = await readManifest(path);
      assert.notEqual(b, a);
      assert.equal(b.description, a.description);
      await writeFile(path, 'format_version: [');
      await assert.rejects(readManifest(path), ServeError);
      await assert.rejects(readManifest(path), ServeError);
      await writeFile(path, MLP_MANIFEST);
      assert.equal(await readManifest(path), a, 'the first text is still known');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
