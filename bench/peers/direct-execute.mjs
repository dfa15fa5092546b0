// The addon alone, as hloserve's worker calls it: a model's executable for one batch size (default
// mlp's batch-1), weights resident on the device, host inputs in and the outputs out, run() after
// run() (the pooled path). Prints one JSON line: p50, p99 and mean µs, and the process's CPU µs per
// call. bench/single-caller.mjs runs it pinned to the server's core, from each checkout it compares.
//   node bench/peers/direct-execute.mjs [CHECKOUT] [CALLS] [MODEL] [BATCH]
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const checkout = resolve(process.argv[2] ?? join(fileURLToPath(import.meta.url), '..', '..', '..'));
const calls = Number(process.argv[3] ?? 3000);
const model = process.argv[4] ?? 'mlp';
const batch = Number(process.argv[5] ?? 1);
const { hostArray, Runtime } = await import(join(checkout, 'native', 'dist', 'lib', 'index.js'));
const { readSafetensors } = await import(join(checkout, 'engine', 'dist', 'src', 'bundle', 'safetensors.js'));
const { loadBundle } = await import(join(checkout, 'engine', 'dist', 'src', 'bundle', 'bundle.js'));

const dir = join(checkout, 'examples', 'models', model);
const rt = await Runtime.create();
const bundle = await loadBundle(dir);
const exe = await rt.compile(await readFile(join(dir, `model.b${batch}.mlir`)), {});
const file = await readSafetensors(bundle.weights.path);
const weights = [];
for (const name of bundle.weights.argumentOrder) {
  const t = file.tensor(name);
  weights.push(await rt.upload({ dtype: t.dtype, shape: t.shape, data: t.data }));
}
// Every executable input is f32 in the bundles this is run on (mlp, resnet).
const xs = bundle.manifest.executableInputs.map((t) => {
  const shape = t.wireShape(batch);
  return hostArray('f32', shape, new Float32Array(shape.reduce((a, b) => a * b, 1)).fill(0.5));
});
for (let i = 0; i < Math.min(300, calls); i++) await exe.run([...xs, ...weights]);
const ticks = () => {
  const f = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
  return Number(f[11]) + Number(f[12]);
};
const us = [];
const t0 = ticks();
for (let i = 0; i < calls; i++) {
  const t = performance.now();
  await exe.run([...xs, ...weights]);
  us.push((performance.now() - t) * 1e3);
}
const cpuUs = ((ticks() - t0) * 10_000) / calls;
const mean = us.reduce((a, b) => a + b, 0) / calls;
us.sort((a, b) => a - b);
console.log(JSON.stringify({ p50: us[Math.floor(calls / 2)], p99: us[Math.floor(calls * 0.99)], mean, cpuUs }));
rt.dispose();
