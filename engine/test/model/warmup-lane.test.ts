import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
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

/**
 * In a child process (a stalled client never returns, and its threads would keep this one from
 * exiting): every example's programs that warm beside the others, run at once from two serving
 * callers and three background ones that say `besideOthers`, for `seconds`. Exit 0 and "ok" when
 * every run came back; 3 when one did not within 10 s. A program whose compiled form waits on the
 * client's pool from inside it (as the FFT does) without its module saying so would stall here.
 */
function besideStress(seconds: number): Promise<{ code: number | null; out: string }> {
  const url = (p: string) => JSON.stringify(new URL(p, import.meta.url).href);
  const script = `
    import { readFile } from 'node:fs/promises';
    import { join } from 'node:path';
    import { Runtime, mayWaitOnClientPool } from '@hloserve/native';
    import { DTYPE_BYTES } from '@hloserve/native/dtype';
    import { loadBundle } from ${url('../../src/bundle/bundle.js')};
    import { CompiledModel } from ${url('../../src/model/compiled-model.js')};
    const rt = await Runtime.create({ cpuAsynchronous: false });
    const zeros = (dtype, shape) => new Uint8Array(shape.reduce((a, b) => a * b, 1) * DTYPE_BYTES[dtype]);
    const models = [];
    for (const name of ['mlp', 'resnet', 'detector', 'classify-image', 'grader']) {
      const bundle = await loadBundle(join(${JSON.stringify(examplesDir)}, name));
      const modules = new Map();
      for (const m of bundle.modules) modules.set(m.batchSize, await readFile(m.path));
      if ([...modules.values()].some((m) => mayWaitOnClientPool(m))) continue;
      const weights = (bundle.weights?.tensors ?? []).map((t) => ({ name: t.name, dtype: t.dtype, shape: t.shape }));
      const compiled = await CompiledModel.compile(rt, { name, manifest: bundle.manifest, modules, weights });
      const buffers = await Promise.all(weights.map((w) => rt.upload({ dtype: w.dtype, shape: w.shape, data: zeros(w.dtype, w.shape) })));
      models.push({ compiled, buffers });
    }
    const end = Date.now() + ${seconds * 1000};
    let runs = 0;
    const caller = async (background, k) => {
      for (let i = k; Date.now() < end; i++) {
        const { compiled, buffers } = models[i % models.length];
        const b = compiled.batchSizes[i % compiled.batchSizes.length];
        const inputs = compiled.manifest.executableInputs.map((s) => {
          const shape = s.wireShape(b || 1).map((d) => (d < 0 ? 1 : d));
          return { name: s.name, dtype: s.dtype, shape, data: zeros(s.dtype, shape) };
        });
        const t = setTimeout(() => { console.log('stalled after ' + runs + ' runs'); process.exit(3); }, 10000);
        await compiled.run(b, inputs, buffers, undefined, background);
        clearTimeout(t);
        runs++;
      }
    };
    await Promise.all([caller(false, 0), caller(false, 1), caller(true, 2), caller(true, 3), caller(true, 4)]);
    console.log('ok ' + models.length + ' ' + runs);
    process.exit(0);
  `;
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      cwd: fileURLToPath(new URL('../..', import.meta.url)),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const kill = setTimeout(() => child.kill('SIGKILL'), (seconds + 120) * 1000);
    child.on('exit', (code) => {
      clearTimeout(kill);
      resolve({ code, out });
    });
  });
}

test("every example's programs that warm beside the others run beside serving executions without a stall", async () => {
  const r = await besideStress(6);
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /^ok 5 \d+/m);
});
