import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, suite, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Executable, type ExecuteOptions, Runtime } from '@hloserve/native';
import { DTYPE_BYTES } from '@hloserve/native/dtype';
import { loadBundle } from '../../src/bundle/bundle.js';
import { CompiledModel } from '../../src/model/compiled-model.js';

const examplesDir = fileURLToPath(new URL('../../../../examples/models/', import.meta.url));

/** The example compiled on `rt`, warmed once with zero weights; the options each warmup run passed. */
async function warmupOptions(rt: Runtime, example: string): Promise<ExecuteOptions[]> {
  const bundle = await loadBundle(join(examplesDir, example));
  const modules = new Map<number, Uint8Array>();
  for (const m of bundle.modules) modules.set(m.batchSize, await readFile(m.path));
  const weights = (bundle.weights?.tensors ?? []).map((t) => ({ name: t.name, dtype: t.dtype, shape: t.shape }));
  const compiled = await CompiledModel.compile(rt, { name: example, manifest: bundle.manifest, modules, weights });
  const buffers = await Promise.all(
    weights.map((w) => {
      const bytes = w.shape.reduce((a, b) => a * b, 1) * DTYPE_BYTES[w.dtype];
      return rt.upload({ dtype: w.dtype, shape: w.shape, data: new Uint8Array(bytes) });
    }),
  );
  const seen: ExecuteOptions[] = [];
  const run = Executable.prototype.run;
  Executable.prototype.run = function (this: Executable, args, options = {}) {
    seen.push(options);
    return run.call(this, args, options);
  };
  try {
    await compiled.warmup(buffers, [compiled.batchSizes[0]!]);
  } finally {
    Executable.prototype.run = run;
    for (const b of buffers) b.dispose();
    compiled.dispose();
  }
  return seen;
}

suite('where a new version warms', () => {
  let rt: Runtime;
  before(async () => {
    rt = await Runtime.create({ cpuAsynchronous: false });
  });
  after(() => rt.dispose());

  test("a program without an FFT warms beside the serving executions (mlp's bytecode)", async () => {
    const seen = await warmupOptions(rt, 'mlp');
    assert.equal(seen.length, 1);
    assert.equal(seen[0]!.background, true);
    assert.equal(seen[0]!.besideOthers, true);
  });

  test("a program with an FFT warms in its turn (fno's bytecode: its FFT waits on the client's pool)", async () => {
    const seen = await warmupOptions(rt, 'fno');
    assert.equal(seen.length, 1);
    assert.equal(seen[0]!.background, true);
    assert.equal(seen[0]!.besideOthers, false);
  });
});
