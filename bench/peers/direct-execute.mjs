// The addon alone, as hloserve's worker calls it: mlp's batch-1 executable, weights resident on the
// device, one host input in and the logits out, run() after run() (the pooled path). Prints one JSON
// line: p50, p99 and mean µs, and the process's CPU µs per call. bench/single-caller.mjs runs it pinned to
// the server's core, from each checkout it compares.
//   node bench/peers/direct-execute.mjs [CHECKOUT] [CALLS]
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const checkout = resolve(process.argv[2] ?? join(fileURLToPath(import.meta.url), '..', '..', '..'));
const calls = Number(process.argv[3] ?? 3000);
const { hostArray, Runtime } = await import(join(checkout, 'native', 'dist', 'lib', 'index.js'));
const { readSafetensors } = await import(join(checkout, 'engine', 'dist', 'src', 'bundle', 'safetensors.js'));
const { loadBundle } = await import(join(checkout, 'engine', 'dist', 'src', 'bundle', 'bundle.js'));

const dir = join(checkout, 'examples', 'models', 'mlp');
const rt = await Runtime.create();
const bundle = await loadBundle(dir);
const exe = await rt.compile(await readFile(join(dir, 'model.b1.mlir')), {});
const file = await readSafetensors(bundle.weights.path);
const weights = [];
for (const name of bundle.weights.argumentOrder) {
  const t = file.tensor(name);
  weights.push(await rt.upload({ dtype: t.dtype, shape: t.shape, data: t.data }));
}
const x = hostArray('f32', [1, 784], new Float32Array(784).fill(0.5));
for (let i = 0; i < 300; i++) await exe.run([x, ...weights]);
const ticks = () => {
  const f = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
  return Number(f[11]) + Number(f[12]);
};
const us = [];
const t0 = ticks();
for (let i = 0; i < calls; i++) {
  const t = performance.now();
  await exe.run([x, ...weights]);
  us.push((performance.now() - t) * 1e3);
}
const cpuUs = ((ticks() - t0) * 10_000) / calls;
const mean = us.reduce((a, b) => a + b, 0) / calls;
us.sort((a, b) => a - b);
console.log(JSON.stringify({ p50: us[Math.floor(calls / 2)], p99: us[Math.floor(calls * 0.99)], mean, cpuUs }));
rt.dispose();
