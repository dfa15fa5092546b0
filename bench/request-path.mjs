// bench/request-path: the in-process Worker's request path (mlp, 1-row requests, no transport),
// closed-loop at concurrency 1, 8, 32 and 64: rows/s, p50/p99, and host µs per request (the
// dispatch cycle minus the execution, per row). Pass another checkout's root to measure its
// engine with the same clients, for before/after runs side by side:
//
//   npm run build && node bench/request-path.mjs [ROOT] [--seconds N] [--concurrency 1,8,32,64] [--no-server-flags]
//   (ROOT defaults to this checkout; it needs engine/dist built, and uses its own node_modules)
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { benchEndpoints, ensureServerNodeFlags } from './stats.mjs';

ensureServerNodeFlags(import.meta.url);

const here = dirname(fileURLToPath(import.meta.url));
const flag = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i < 0 ? fallback : process.argv[i + 1];
};
const positional = process.argv
  .slice(2)
  .filter((a, i, all) => !a.startsWith('--') && all[i - 1] !== '--seconds' && all[i - 1] !== '--concurrency');
const root = resolve(positional[0] ?? join(here, '..'));
const seconds = Number(flag('--seconds', '3'));
const concurrencies = flag('--concurrency', '1,8,32,64').split(',').map(Number);
const load = (rel) => import(pathToFileURL(join(root, 'engine', 'dist', 'src', rel)).href);
const { defaultConfig, workerSettings } = await load('config/node-config.js');
const { createLogger } = await load('log.js');
const { Worker } = await load('worker/worker.js');

const examples = join(here, '..', 'examples', 'models');
const base = workerSettings(defaultConfig(examples));
const settings = {
  ...base,
  modelsInclude: ['mlp'],
  runtime: { ...base.runtime, weightCacheBytes: null },
  endpoints: benchEndpoints(base.endpoints),
};
const worker = await Worker.start({ modelRepo: examples, settings, log: createLogger('silent') });
// One immutable payload, as a transport hands the engine bytes it already holds (and perf_analyzer
// reuses its input data): a fresh filled array per request was the client's own cost.
const x = new Uint8Array(new Float32Array(784).fill(0.5).buffer);
const request = () => ({
  modelName: 'mlp',
  modelVersion: '',
  id: '',
  parameters: {},
  inputs: [
    {
      name: 'x',
      datatype: 'FP32',
      shape: [1, 784],
      parameters: {},
      data: { kind: 'raw', bytes: x },
    },
  ],
  outputs: [],
});
// A caller that never cancels passes no AbortSignal (creating one costs about 4.5 µs on Node 20).
const ctx = { deadline: null };

async function closedLoop(concurrency, secs) {
  const end = performance.now() + secs * 1e3;
  const lat = [];
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const t = performance.now();
        await worker.infer(request(), ctx);
        lat.push(performance.now() - t);
      }
    }),
  );
  lat.sort((a, b) => a - b);
  const q = (p) => Math.round(lat[Math.floor(p * (lat.length - 1))] * 1e3);
  return { rowsPerSecond: lat.length / secs, p50: q(0.5), p99: q(0.99), rows: lat.length };
}

console.log(
  `# bench/request-path, engine from ${root}, ${seconds} s per point, node flags: ${process.execArgv.join(' ') || 'none'}`,
);
console.log('| concurrency | rows/s | p50 µs | p99 µs | µs per dispatch: execute / cycle | host µs per request |');
console.log('|---|---|---|---|---|---|');
await closedLoop(8, 2);
for (const c of concurrencies) {
  await closedLoop(c, 0.5);
  const s0 = worker.scheduler.stats('mlp');
  const r = await closedLoop(c, seconds);
  const s1 = worker.scheduler.stats('mlp');
  const dispatches = s1.dispatchCount - s0.dispatchCount;
  const execUs = ((s1.computeSecondsTotal - s0.computeSecondsTotal) / dispatches) * 1e6;
  const cycleUs = (seconds * 1e6) / dispatches;
  const hostUs = (cycleUs - execUs) / (r.rows / dispatches);
  console.log(
    `| ${c} | ${r.rowsPerSecond.toFixed(0)} | ${r.p50} | ${r.p99} | ${execUs.toFixed(0)} / ${cycleUs.toFixed(0)} | ${hostUs.toFixed(1)} |`,
  );
}
await worker.stop(false);
