// bench/hooks-ab: what a pass-through pre+post hook adds on the whole request path, two engine
// builds side by side in one process, so that a loaded machine's drift falls on both alike.
//
// Each build serves the mlp example twice from its own in-process Worker: as is ("none") and as
// `mlp-hooked` (the same bundle with `preprocess(t) { return t }` and `postprocess(t) { return t }`)
// and, with --post-only, `mlp-post` (postprocess only). Rounds of --ms milliseconds of closed-loop
// 1-row requests at concurrency 1 (then --c16: 16) rotate through build x model; a round's
// "added" is its hooked p50 minus the same build's plain p50 in the same round, and the table is
// the median over rounds, as is process CPU per row (user + system, all threads: the fairer
// figure on a loaded machine). Prints one JSON line per build and concurrency too. --image adds
// classify-image (PNG bytes decoded in preprocess, top-3 in postprocess: calls by message) to the
// rotation; its "added" and "% of plain" are against mlp, so only its own p50 and rate compare.
// --split also times, per build and model, the pool's round trip of each hook call (handed over
// to answered, on the engine's thread) and the program's own run on the event loop's thread (a
// lone request runs inline): where a hooked request's added time goes (bench/RESULTS.md, session
// 31). It wraps two methods of each build's classes, so take the p50s of a run without it.
// --model NAME serves another example instead of mlp, as NAME, NAME-hooked and NAME-post (its own
// hooks and client IO removed; its first input must be f32, filled with 0.25). mlp's run streams
// its 2.2 MB of weights through the engine thread's caches, so the JavaScript after it runs several
// times slower; grader's run is a few µs over 2 KB, so on grader the figure is the hook path's own
// (bench/RESULTS.md, session 32).
//
//   cp -r engine/dist engine/dist-before   # built at the older commit; then build the newer one
//   node bench/hooks-ab.mjs dist dist-before [--rounds 20] [--ms 400] [--c16]
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';

const here = dirname(fileURLToPath(import.meta.url));
const examples = join(here, '..', 'examples', 'models');
const args = process.argv.slice(2);
const flag = (name, fallback) => {
  const i = args.indexOf(name);
  return i < 0 ? fallback : Number(args[i + 1]);
};
const rounds = flag('--rounds', 20);
const modelAt = args.indexOf('--model');
const base = modelAt < 0 ? 'mlp' : args[modelAt + 1];
// The served variants: the base model as is, with a pass-through pre + post, with a post only.
const PLAIN = base;
const HOOKED = `${base}-hooked`;
const POST = `${base}-post`;
const ms = flag('--ms', 400);
const split = args.includes('--split');
const builds = args.filter(
  (a, i) => !a.startsWith('--') && !(i > 0 && ['--rounds', '--ms', '--model'].includes(args[i - 1])),
);
if (builds.length === 0) throw new Error('usage: node bench/hooks-ab.mjs <build under engine/> ...');
const concurrencies = args.includes('--c16-only') ? [16] : args.includes('--c16') ? [1, 16] : [1];
const models = [
  PLAIN,
  HOOKED,
  ...(args.includes('--post-only') ? [POST] : []),
  ...(args.includes('--image') ? ['classify-image'] : []),
];

const repo = mkdtempSync(join(tmpdir(), 'hloserve-bench-hooks-ab-'));
// The base model as plain executable IO: no hooks of its own, clients send and get what the program takes.
const manifest = parseYaml(readFileSync(join(examples, base, 'manifest.yaml'), 'utf8'));
delete manifest.client_inputs;
delete manifest.client_outputs;
for (const m of [PLAIN, HOOKED, POST]) {
  cpSync(join(examples, base), join(repo, m), { recursive: true });
  for (const f of ['model.js', 'model.mjs', 'model.ts', 'client-reference.json'])
    rmSync(join(repo, m, f), { force: true });
  writeFileSync(join(repo, m, 'manifest.yaml'), stringifyYaml({ ...manifest, name: m }));
}
// The first input's wire shape at batch 1, as the engine reads the manifest.
const { parseManifest } = await import(
  pathToFileURL(join(here, '..', 'engine', builds[0], 'src', 'bundle', 'manifest.js')).href
);
const plainManifest = join(repo, PLAIN, 'manifest.yaml');
const input = parseManifest(readFileSync(plainManifest, 'utf8'), plainManifest).executableInputs[0];
if (input.dtype !== 'f32') throw new Error(`--model ${base}: its first input is ${input.dtype}, not f32`);
const inputShape = input.wireShape(1);
writeFileSync(
  join(repo, HOOKED, 'model.mjs'),
  'export function preprocess(t) { return t; }\nexport function postprocess(t) { return t; }\n',
);
writeFileSync(join(repo, POST, 'model.mjs'), 'export function postprocess(t) { return t; }\n');
if (models.includes('classify-image'))
  cpSync(join(examples, 'classify-image'), join(repo, 'classify-image'), { recursive: true });

const workers = {};
// --split: per "build model", the hook calls' round trips by function and the inline runs (ms).
const splits = {};
const splitOf = (b, model) => (splits[`${b} ${model}`] ??= { preprocess: [], postprocess: [], inline: [] });
async function wrapForSplit(b, load) {
  const { HookPool } = await load('hooks/hook-pool.js');
  const { CompiledModel } = await load('model/compiled-model.js');
  const run = HookPool.prototype.run;
  HookPool.prototype.run = function (call) {
    const t = performance.now();
    const p = run.call(this, call);
    const times = splitOf(b, call.context.model)[call.fn];
    if (times)
      p.then(
        () => times.push(performance.now() - t),
        () => {},
      );
    return p;
  };
  const runInline = CompiledModel.prototype.runInline;
  CompiledModel.prototype.runInline = function (...a) {
    const t = performance.now();
    const out = runInline.apply(this, a);
    if (out !== null) splitOf(b, this.name).inline.push(performance.now() - t);
    return out;
  };
}
for (const b of builds) {
  const load = (path) => import(pathToFileURL(join(here, '..', 'engine', b, 'src', path)).href);
  if (split) await wrapForSplit(b, load);
  const { defaultConfig, workerSettings } = await load('config/node-config.js');
  const { createLogger } = await load('log.js');
  const { Worker } = await load('worker/worker.js');
  const settings = workerSettings(defaultConfig(repo));
  workers[b] = await Worker.start({
    modelRepo: repo,
    settings: { ...settings, cacheDir: join(repo, `.state-${b}`) },
    log: createLogger('silent'),
  });
}

const x = new Float32Array(inputShape.reduce((a, b) => a * b, 1)).fill(0.25);
const ref = JSON.parse(readFileSync(join(examples, 'classify-image', 'client-reference.json'), 'utf8'));
const png = Buffer.from(ref.inputs[0].data_b64[0], 'base64');
const imageRequest = {
  modelName: 'classify-image',
  modelVersion: '',
  id: '',
  parameters: {},
  inputs: [
    {
      name: 'image',
      datatype: 'BYTES',
      shape: [1],
      parameters: {},
      data: { kind: 'raw', bytes: Buffer.concat([Buffer.from(new Uint32Array([png.length]).buffer), png]) },
    },
  ],
  outputs: [],
};
const request = (model) => (model === 'classify-image' ? imageRequest : baseRequest(model));
const baseRequest = (model) => ({
  modelName: model,
  modelVersion: '',
  id: '',
  parameters: {},
  inputs: [
    {
      name: input.name,
      datatype: 'FP32',
      shape: inputShape,
      parameters: {},
      data: { kind: 'raw', bytes: new Uint8Array(x.buffer) },
    },
  ],
  outputs: [],
});

async function closedLoop(worker, model, concurrency, forMs) {
  const lat = [];
  const end = performance.now() + forMs;
  const ctx = { deadline: null };
  const req = request(model);
  const cpu0 = process.cpuUsage();
  const wakes0 = worker.hookPoolCounters?.wakes ?? NaN;
  const parts = splitOf(buildOf.get(worker), model);
  for (const k of Object.keys(parts)) parts[k] = [];
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const t = performance.now();
        await worker.infer(req, ctx);
        lat.push(performance.now() - t);
      }
    }),
  );
  const cpu = process.cpuUsage(cpu0);
  // Wake-ups of a sleeping hook thread per row (the pool's counter; a build without it: NaN).
  const wakes = ((worker.hookPoolCounters?.wakes ?? NaN) - wakes0) / lat.length;
  lat.sort((a, b) => a - b);
  const p50us = (xs) => (xs.length === 0 ? NaN : [...xs].sort((a, b) => a - b)[xs.length >> 1] * 1000);
  return {
    pre: p50us(parts.preprocess),
    post: p50us(parts.postprocess),
    inline: p50us(parts.inline),
    wakes,
    p50: lat[Math.floor(lat.length / 2)] * 1000,
    rate: lat.length / (forMs / 1000),
    cpuPerRow: (cpu.user + cpu.system) / lat.length,
  };
}

const fmtUs = (x) => (x === undefined || Number.isNaN(x) ? '-' : `${x.toFixed(1)} µs`);
const buildOf = new Map(Object.entries(workers).map(([b, w]) => [w, b]));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const b of builds) for (const m of models) await closedLoop(workers[b], m, 4, 500);
const cells = [];
for (const b of builds) for (const m of models) cells.push([b, m]);
console.log(
  `hooks-ab: ${rounds} rounds of ${ms} ms per build and model, rotating; builds ${builds.join(', ')}; model ${base}`,
);
for (const c of concurrencies) {
  const res = {};
  for (let r = 0; r < rounds; r++) {
    const order = cells.map((_, i) => cells[(i + r) % cells.length]);
    const got = {};
    for (const [b, m] of order) got[`${b} ${m}`] = await closedLoop(workers[b], m, c, ms);
    for (const b of builds)
      for (const m of models) {
        const k = `${b} ${m}`;
        (res[k] ??= {
          p50: [],
          rate: [],
          added: [],
          ratio: [],
          cpu: [],
          wakes: [],
          pre: [],
          post: [],
          inline: [],
        }).p50.push(got[k].p50);
        for (const part of ['pre', 'post', 'inline']) if (!Number.isNaN(got[k][part])) res[k][part].push(got[k][part]);
        res[k].cpu.push(got[k].cpuPerRow);
        res[k].wakes.push(got[k].wakes);
        res[k].rate.push(got[k].rate);
        res[k].added.push(got[k].p50 - got[`${b} ${PLAIN}`].p50);
        res[k].ratio.push(got[k].rate / got[`${b} ${PLAIN}`].rate);
      }
  }
  for (const b of builds)
    for (const m of models) {
      const v = res[`${b} ${m}`];
      const row = {
        c,
        build: b,
        model: m,
        p50: median(v.p50),
        rate: median(v.rate),
        added: median(v.added),
        ratio: median(v.ratio),
        cpuPerRow: median(v.cpu),
        wakesPerRow: median(v.wakes),
        ...(split ? { preUs: median(v.pre), postUs: median(v.post), inlineUs: median(v.inline) } : {}),
      };
      console.log(
        `  c=${c} ${b.padEnd(12)} ${m.padEnd(14)} p50 ${row.p50.toFixed(0)} µs  added p50 ${row.added.toFixed(0)} µs  ${row.rate.toFixed(0)} rows/s (${(row.ratio * 100).toFixed(0)} % of plain), process CPU ${row.cpuPerRow.toFixed(0)} µs/row${m === PLAIN || Number.isNaN(row.wakesPerRow) ? '' : `, hook thread woken ${row.wakesPerRow.toFixed(2)}/row`}`,
      );
      if (split)
        console.log(
          `      split: hook round trip p50 pre ${fmtUs(row.preUs)}, post ${fmtUs(row.postUs)}; program run inline p50 ${fmtUs(row.inlineUs)}`,
        );
      if (process.env.HOOKS_BENCH_JSON) console.log(JSON.stringify(row));
    }
}
for (const w of Object.values(workers)) await w.stop(false);
rmSync(repo, { recursive: true, force: true });
