// bench/first-execute: what a warmup saves the first request. For every size of fno, mlp and
// resnet, the executable is loaded from a warm compiled-executable cache (as a warm start does),
// then run twice with zero inputs and zero weights: the first run carries the first-execute cost
// that warmup takes off the request path, the second is the steady cost. Fresh executables per
// round (a new deserialize each time), rounds alternate nothing else.
// Usage: npm run build && node bench/first-execute.mjs [--rounds 3]
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Runtime } from '../native/dist/lib/index.js';
import { DTYPE_BYTES } from '../native/dist/lib/dtype.js';
import { ExecutableCache } from '../engine/dist/src/device/executable-cache.js';
import { CompiledModel } from '../engine/dist/src/model/compiled-model.js';
import { loadBundle } from '../engine/dist/src/bundle/bundle.js';
import { examplesDir } from '../e2e/dist/src/server-process.js';
import { fmt, machine } from './stats.mjs';

const i = process.argv.indexOf('--rounds');
const rounds = i >= 0 ? Number(process.argv[i + 1]) : 3;

const rt = await Runtime.create();
const dir = await mkdtemp(join(tmpdir(), 'hloserve-first-'));
console.log(`# bench/first-execute, machine: ${machine()}`);
console.log('round model     batch  first_ms  second_ms  first/second');
const ratios = [];
try {
  const cache = await ExecutableCache.open({ dir, maxBytes: 2 ** 30 });
  for (let r = 0; r <= rounds; r++) {
    for (const name of ['fno', 'mlp', 'resnet']) {
      const b = await loadBundle(join(examplesDir, name));
      const modules = new Map();
      for (const m of b.modules) modules.set(m.batchSize, await readFile(m.path));
      const weights = (b.weights?.tensors ?? []).map((t) => ({ name: t.name, dtype: t.dtype, shape: t.shape }));
      // Round 0 fills the cache (compiles); rounds 1.. load from it.
      const model = await CompiledModel.compile(rt, { name, manifest: b.manifest, modules, weights }, undefined, cache);
      const buffers = await Promise.all(
        weights.map((w) =>
          rt.upload({
            dtype: w.dtype,
            shape: w.shape,
            data: new Uint8Array(w.shape.reduce((a, x) => a * x, 1) * DTYPE_BYTES[w.dtype]),
          }),
        ),
      );
      for (const batch of model.batchSizes) {
        const first = (await model.warmup(buffers, [batch])).get(batch) * 1e3;
        const second = (await model.warmup(buffers, [batch])).get(batch) * 1e3;
        if (r > 0) {
          ratios.push(first / second);
          console.log(
            `${String(r).padStart(5)} ${name.padEnd(9)} ${String(batch).padStart(5)}  ${fmt(first, 2).padStart(8)}  ${fmt(second, 2).padStart(9)}  ${fmt(first / second, 2).padStart(12)}`,
          );
        }
      }
      for (const x of buffers) x.dispose();
      model.dispose();
    }
  }
} finally {
  rt.dispose();
  await rm(dir, { recursive: true, force: true });
}
ratios.sort((a, b) => a - b);
console.log(`median first/second: ${fmt(ratios[(ratios.length - 1) >> 1], 2)} over ${ratios.length} executables`);
