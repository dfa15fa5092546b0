// bench/request-path: the in-process Worker's request path (mlp, 1-row requests, no transport),
// closed-loop at concurrency 1, 8, 32 and 64: rows/s, p50/p99, and host µs per request (the
// dispatch cycle minus the execution, per row).
//
// Before/after in one run: pass several checkouts' roots. Rounds alternate between them (this VM
// drifts by 20 % within minutes, so runs made apart cannot be compared), each round a fresh child
// process (two engines in one process share one V8 heap, and one's garbage is collected on the
// other's time); the table gives each root's median round.
//
// --instant-device isolates the host cost: every executable answers at once with the outputs of its
// first real run at that batch size, so rows/s is the engine's own ceiling (codec, scheduler,
// coalescing, slicing) with no device time and no device noise. A diagnostic, labelled as such;
// the plain mode is the real measure.
//
//   npm run build && node bench/request-path.mjs [ROOT ...] [--seconds N] [--rounds N]
//       [--concurrency 1,8,32,64] [--instant-device] [--no-server-flags]
//   (ROOT defaults to this checkout; each needs engine/dist built and its own node_modules, a
//   symlink to this checkout's will do)
import { spawnSync } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { benchEndpoints, ensureServerNodeFlags } from './stats.mjs';

ensureServerNodeFlags(import.meta.url);

const here = dirname(fileURLToPath(import.meta.url));
const valued = new Set(['--seconds', '--rounds', '--concurrency', '--child']);
const flag = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i < 0 ? fallback : process.argv[i + 1];
};
const positional = process.argv.slice(2).filter((a, i, all) => !a.startsWith('--') && !valued.has(all[i - 1]));
const roots = (positional.length > 0 ? positional : [join(here, '..')]).map((r) => resolve(r));
const seconds = Number(flag('--seconds', '3'));
const rounds = Number(flag('--rounds', roots.length > 1 ? '4' : '1'));
const concurrencies = flag('--concurrency', '1,8,32,64').split(',').map(Number);
const instant = process.argv.includes('--instant-device');

const examples = join(here, '..', 'examples', 'models');

/** The Executable class the engine under `root` really uses (through its node_modules). */
async function executableClass(root) {
  const req = createRequire(join(root, 'engine', 'package.json'));
  const file = realpathSync(req.resolve('@hloserve/native/executable'));
  return (await import(pathToFileURL(file).href)).Executable;
}

const patched = new Set();
async function answerInstantly(root) {
  const Executable = await executableClass(root);
  if (patched.has(Executable)) return;
  patched.add(Executable);
  const real = Executable.prototype.run;
  const first = new WeakMap();
  Executable.prototype.run = async function (args, options) {
    let out = first.get(this);
    if (out === undefined) first.set(this, (out = await real.call(this, args, options)));
    return out.map((o) => ({ ...o }));
  };
}

async function startWorker(root) {
  const load = (rel) => import(pathToFileURL(join(root, 'engine', 'dist', 'src', rel)).href);
  const { defaultConfig, workerSettings } = await load('config/node-config.js');
  const { createLogger } = await load('log.js');
  const { Worker } = await load('worker/worker.js');
  if (instant) await answerInstantly(root);
  const base = workerSettings(defaultConfig(examples));
  const settings = {
    ...base,
    modelsInclude: ['mlp'],
    runtime: { ...base.runtime, weightCacheBytes: null },
    endpoints: benchEndpoints(base.endpoints),
  };
  return Worker.start({ modelRepo: examples, settings, log: createLogger('silent') });
}

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

async function closedLoop(worker, concurrency, secs) {
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

async function measure(worker, c) {
  await closedLoop(worker, c, 0.5);
  const s0 = worker.scheduler.stats(worker.registry.get('mlp').queue);
  const r = await closedLoop(worker, c, seconds);
  const s1 = worker.scheduler.stats(worker.registry.get('mlp').queue);
  const dispatches = s1.dispatchCount - s0.dispatchCount;
  const execUs = ((s1.computeSecondsTotal - s0.computeSecondsTotal) / dispatches) * 1e6;
  const cycleUs = (seconds * 1e6) / dispatches;
  return { ...r, execUs, cycleUs, hostUs: (cycleUs - execUs) / (r.rows / dispatches) };
}

const child = flag('--child', null);
if (child !== null) {
  // One round for one engine: JSON lines to the parent.
  const worker = await startWorker(resolve(child));
  await closedLoop(worker, 8, 2);
  for (const c of concurrencies) console.log(JSON.stringify({ c, ...(await measure(worker, c)) }));
  await worker.stop(false);
  process.exit(0);
}

console.log(
  `# bench/request-path${instant ? ' --instant-device (host cost only: no device time)' : ''}, ${seconds} s per point, ${rounds} round(s) alternating, node flags: ${process.execArgv.join(' ') || 'none'}`,
);
roots.forEach((r, i) => console.log(`# engine ${String.fromCharCode(65 + i)}: ${r}`));
const passOn = [
  '--seconds',
  String(seconds),
  '--concurrency',
  concurrencies.join(','),
  ...(instant ? ['--instant-device'] : []),
];
const script = fileURLToPath(import.meta.url);
const results = roots.map(() => new Map(concurrencies.map((c) => [c, []])));
for (let k = 0; k < rounds; k++) {
  roots.forEach((root, i) => {
    const r = spawnSync(process.execPath, [...process.execArgv, script, '--child', root, ...passOn], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    if (r.status !== 0) throw new Error(`engine ${root}: child exited ${r.status}`);
    for (const line of r.stdout.split('\n').filter((l) => l.startsWith('{'))) {
      const m = JSON.parse(line);
      results[i].get(m.c).push(m);
    }
  });
}
console.log(
  '| engine | concurrency | rows/s (median round) | each round | p50 µs | p99 µs | µs per dispatch: execute / cycle | host µs per request |',
);
console.log('|---|---|---|---|---|---|---|---|');
for (const c of concurrencies) {
  results.forEach((byC, i) => {
    const rs = byC.get(c);
    const m = [...rs].sort((a, b) => a.rowsPerSecond - b.rowsPerSecond)[Math.floor((rs.length - 1) / 2)];
    console.log(
      `| ${String.fromCharCode(65 + i)} | ${c} | ${m.rowsPerSecond.toFixed(0)} | ${rs.map((r) => r.rowsPerSecond.toFixed(0)).join(' ')} | ${m.p50} | ${m.p99} | ${m.execUs.toFixed(0)} / ${m.cycleUs.toFixed(0)} | ${m.hostUs.toFixed(1)} |`,
    );
  });
}
