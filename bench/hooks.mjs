// bench/hooks: what bundle hooks cost on the request path, and the image example's throughput.
//
// (a) The mlp example served twice by one in-process Worker: as is, and as `mlp-hooked`, the same
//     bundle with a pass-through preprocess and postprocess. Closed-loop 1-row requests at
//     concurrency 1 and 16, rounds alternating between the two models; prints p50/p99 and what
//     the hooks add. Target (issue 13): at most 30 µs p50 at c=1.
// (b) classify-image: PNG bytes in, top-3 labels out, decoding in the preprocess hook; rows/s at
//     concurrency 1 and 16.
//
//   npm run build && node bench/hooks.mjs [--seconds N] [--rounds N] [--no-image] [--engine DIR]
//
// --engine names another build of the engine (a copy of engine/dist) to measure, so that two
// builds can be compared in alternating runs (bench/hooks-ab.mjs).
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const examples = join(here, '..', 'examples', 'models');
const flag = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i < 0 ? fallback : process.argv[i + 1];
};
const seconds = Number(flag('--seconds', 3));
const rounds = Number(flag('--rounds', 3));
const engine = resolve(flag('--engine', join(here, '..', 'engine', 'dist')));
const image = !process.argv.includes('--no-image');
const load = (path) => import(pathToFileURL(join(engine, 'src', path)).href);
const { defaultConfig, workerSettings } = await load('config/node-config.js');
const { createLogger } = await load('log.js');
const { Worker } = await load('worker/worker.js');

const repo = mkdtempSync(join(tmpdir(), 'hloserve-bench-hooks-'));
cpSync(join(examples, 'mlp'), join(repo, 'mlp'), { recursive: true });
cpSync(join(examples, 'mlp'), join(repo, 'mlp-hooked'), { recursive: true });
writeFileSync(
  join(repo, 'mlp-hooked', 'model.mjs'),
  'export function preprocess(t) { return t; }\nexport function postprocess(t) { return t; }\n',
);
cpSync(join(examples, 'classify-image'), join(repo, 'classify-image'), { recursive: true });

const settings = workerSettings(defaultConfig(repo));
const worker = await Worker.start({
  modelRepo: repo,
  settings: { ...settings, cacheDir: join(repo, '.state') },
  log: createLogger('silent'),
});

const x = new Float32Array(784).fill(0.25);
const mlpRequest = (model) => ({
  modelName: model,
  modelVersion: '',
  id: '',
  parameters: {},
  inputs: [
    {
      name: 'x',
      datatype: 'FP32',
      shape: [1, 784],
      parameters: {},
      data: { kind: 'raw', bytes: new Uint8Array(x.buffer) },
    },
  ],
  outputs: [],
});
const ref = JSON.parse(readFileSync(join(examples, 'classify-image', 'client-reference.json'), 'utf8'));
const png = Buffer.from(ref.inputs[0].data_b64[0], 'base64');
const bytes = Buffer.concat([Buffer.from(new Uint32Array([png.length]).buffer), png]);
const imageRequest = {
  modelName: 'classify-image',
  modelVersion: '',
  id: '',
  parameters: {},
  inputs: [{ name: 'image', datatype: 'BYTES', shape: [1], parameters: {}, data: { kind: 'raw', bytes } }],
  outputs: [],
};

async function closedLoop(request, concurrency, ms) {
  const lat = [];
  const end = performance.now() + ms;
  const ctx = { deadline: null };
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const t = performance.now();
        await worker.infer(request, ctx);
        lat.push(performance.now() - t);
      }
    }),
  );
  lat.sort((a, b) => a - b);
  const q = (p) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))] * 1000;
  return { n: lat.length, perSecond: lat.length / (ms / 1000), p50: q(0.5), p99: q(0.99) };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const m of ['mlp', 'mlp-hooked', 'classify-image'])
  await closedLoop(m === 'classify-image' ? imageRequest : mlpRequest(m), 4, 500); // warm

console.log(`(a) pass-through pre+post hooks on mlp, ${rounds} rounds of ${seconds}s each, alternating`);
for (const c of [1, 16]) {
  const res = { mlp: [], 'mlp-hooked': [] };
  for (let r = 0; r < rounds; r++) {
    for (const m of r % 2 === 0 ? ['mlp', 'mlp-hooked'] : ['mlp-hooked', 'mlp'])
      res[m].push(await closedLoop(mlpRequest(m), c, seconds * 1000));
  }
  const row = (m) => ({
    p50: median(res[m].map((x) => x.p50)),
    p99: median(res[m].map((x) => x.p99)),
    rate: median(res[m].map((x) => x.perSecond)),
  });
  const a = row('mlp');
  const b = row('mlp-hooked');
  if (process.env.HOOKS_BENCH_JSON) console.log(JSON.stringify({ c, none: a, hooks: b }));
  console.log(
    `  c=${c}: none p50 ${a.p50.toFixed(0)} µs p99 ${a.p99.toFixed(0)} µs ${a.rate.toFixed(0)}/s | hooks p50 ${b.p50.toFixed(0)} µs p99 ${b.p99.toFixed(0)} µs ${b.rate.toFixed(0)}/s | added p50 ${(b.p50 - a.p50).toFixed(0)} µs (${((b.p50 / a.p50 - 1) * 100).toFixed(0)} %)`,
  );
}
if (image) console.log('(b) classify-image: one 32x32 PNG per request, decoded in preprocess, top-3 in postprocess');
for (const c of image ? [1, 16] : []) {
  const r = await closedLoop(imageRequest, c, seconds * 1000);
  console.log(
    `  c=${c}: ${r.perSecond.toFixed(0)} images/s, p50 ${(r.p50 / 1000).toFixed(2)} ms, p99 ${(r.p99 / 1000).toFixed(2)} ms`,
  );
}
await worker.stop(false);
rmSync(repo, { recursive: true, force: true });
