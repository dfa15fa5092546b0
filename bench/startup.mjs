// bench/startup: `hloserve serve` on examples/models, from spawn to "listening" (every model
// ready), with a cold compiled-executable cache (emptied before the start) and a warm one (left by
// the previous start), in alternating rounds in one run. Also the models' own load time (the sum
// of the "model ready" loadSeconds: read, compile or load from the cache, weights, warmup) and the
// cache counters the server reports, so each start is shown to be what it claims. Then, in this
// process, the executables alone: every module of examples/models through an ExecutableCache,
// cold (empty directory) and warm, alternating.
// --priorities idle,normal repeats each round per background priority of the addon
// (HLOSERVE_BACKGROUND_PRIORITY: compiles at SCHED_IDLE, the default, or at the serving threads'
// priority), to show what the priority does to a cold start on a machine shared with other work;
// --no-executables skips the second part; --timeline prints each start's timeline and load phases.
// main_cpu_s / proc_cpu_s: CPU seconds the server's main (JS) thread and the whole process had used
// when it logged `listening` (Linux /proc): less sensitive to a loaded machine than wall time, and
// the main thread's is the part of a warm start that no other thread can take over.
// Usage: npm run build && node bench/startup.mjs [--rounds 4] [--priorities idle] [--no-executables]
import { get } from 'node:http';
import { mkdtemp, readdir, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { cacheDir as pluginCacheDir } from '../native/dist/lib/plugin.js';
import { Runtime } from '../native/dist/lib/index.js';
import { ExecutableCache } from '../engine/dist/src/device/executable-cache.js';
import { examplesDir, startServer } from '../e2e/dist/src/server-process.js';
import { processCpuSeconds } from './proc-cpu.mjs';
import { arg, fmt, machine } from './stats.mjs';

const rounds = Number(arg('rounds', '4'));
const priorities = arg('priorities', 'idle').split(',');

// HLOSERVE_CACHE_DIR moves every cache, the installed plugins included: the scratch cache
// directory links to the installed plugins so only the compiled executables start empty.
const scratch = await mkdtemp(join(tmpdir(), 'hloserve-startup-'));
await symlink(join(pluginCacheDir(), 'plugins'), join(scratch, 'plugins'));

async function metrics(port) {
  const text = await new Promise((resolve, reject) => {
    get(`http://127.0.0.1:${port}/metrics`, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve(body));
    }).on('error', reject);
  });
  const read = (name) =>
    Number(
      text
        .split('\n')
        .find((l) => l.startsWith(`${name} `))
        ?.split(' ')[1] ?? NaN,
    );
  return {
    hits: read('hloserve_compile_cache_hits_total'),
    misses: read('hloserve_compile_cache_misses_total'),
    bytes: read('hloserve_compile_cache_bytes'),
  };
}

async function start(kind, priority) {
  if (kind === 'cold') await rm(join(scratch, 'executables'), { recursive: true, force: true });
  const t0 = performance.now();
  const wall0 = Date.now();
  const server = await startServer({
    HLOSERVE_CACHE_DIR: scratch,
    HLOSERVE_LOGGING_LEVEL: 'info',
    HLOSERVE_BACKGROUND_PRIORITY: priority,
  });
  const readyS = (performance.now() - t0) / 1e3;
  const cpu = processCpuSeconds(server.child.pid);
  let loadS = 0;
  let models = 0;
  // The timeline (seconds after spawn, from the log lines' times): first line, runtime ready, last
  // model ready, listening; and the sum over models of each load phase.
  const at = { first: NaN, runtime: NaN, lastModel: NaN, listening: NaN };
  const phases = { read: 0, compile: 0, weights: 0, warmup: 0 };
  for (const line of server.logs) {
    if (!line.startsWith('{')) continue;
    const rec = JSON.parse(line);
    const s = (Date.parse(rec.time) - wall0) / 1e3;
    if (Number.isNaN(at.first)) at.first = s;
    if (rec.msg === 'runtime ready') at.runtime = s;
    if (rec.msg === 'listening') at.listening = s;
    if (rec.msg === 'model ready') {
      loadS += rec.loadSeconds;
      models++;
      at.lastModel = s;
      phases.read += rec.readSeconds;
      phases.compile += rec.compileSeconds;
      phases.weights += rec.weightsSeconds;
      phases.warmup += rec.warmupSeconds;
    }
  }
  if (process.argv.includes('--timeline'))
    console.log(
      `  timeline (s after spawn): first log ${fmt(at.first, 2)}, runtime ${fmt(at.runtime, 2)}, last model ${fmt(at.lastModel, 2)}, listening ${fmt(at.listening, 2)}; ` +
        `phase sums: read ${fmt(phases.read, 2)}, compile/cache ${fmt(phases.compile, 2)}, weights ${fmt(phases.weights, 2)}, warmup ${fmt(phases.warmup, 2)}`,
    );
  const m = await metrics(server.ports.metrics);
  await server.stop();
  return { kind, priority, readyS, loadS, models, ...cpu, ...m };
}

console.log(`# bench/startup, machine: ${machine()}`);
console.log(`# examples/models, ${rounds} rounds of (cold, warm); seconds from spawn to "listening"`);
console.log(
  'round kind  priority ready_s  models_load_s  models  compiled  loaded_from_cache  cache_MiB  main_cpu_s  proc_cpu_s',
);
const results = [];
try {
  for (let r = 1; r <= rounds; r++) {
    for (const [kind, priority] of ['cold', 'warm'].flatMap((k) => priorities.map((p) => [k, p]))) {
      const s = await start(kind, priority);
      results.push(s);
      console.log(
        `${String(r).padStart(5)} ${kind}  ${priority.padEnd(8)} ${fmt(s.readyS, 2).padStart(7)}  ${fmt(s.loadS, 2).padStart(13)}  ${String(
          s.models,
        ).padStart(
          6,
        )}  ${String(s.misses).padStart(8)}  ${String(s.hits).padStart(17)}  ${fmt(s.bytes / 2 ** 20, 2).padStart(9)}  ${fmt(
          s.mainCpuS,
          2,
        ).padStart(10)}  ${fmt(s.procCpuS, 2).padStart(10)}`,
      );
    }
  }
} finally {
  await rm(scratch, { recursive: true, force: true });
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
for (const priority of priorities) {
  const of = (kind, field) =>
    median(results.filter((s) => s.kind === kind && s.priority === priority).map((s) => s[field]));
  const coldReady = of('cold', 'readyS');
  const warmReady = of('warm', 'readyS');
  const coldLoad = of('cold', 'loadS');
  const warmLoad = of('warm', 'loadS');
  console.log(
    `median ready (${priority}): cold ${fmt(coldReady, 2)} s, warm ${fmt(warmReady, 2)} s, warm/cold ${fmt(warmReady / coldReady, 3)}`,
  );
  console.log(
    `median models load (${priority}): cold ${fmt(coldLoad, 2)} s, warm ${fmt(warmLoad, 2)} s, warm/cold ${fmt(warmLoad / coldLoad, 3)}`,
  );
  console.log(
    `median warm start CPU (${priority}): main thread ${fmt(of('warm', 'mainCpuS'), 2)} s, process ${fmt(of('warm', 'procCpuS'), 2)} s`,
  );
}
if (process.argv.includes('--no-executables')) process.exit(0);

// The executables alone: what the cache replaces (compile) against what it does instead (check and
// deserialize-and-load), without process start, weights or warmup.
const modules = [];
for (const model of ['fno', 'mlp', 'resnet']) {
  for (const f of (await readdir(join(examplesDir, model))).filter((n) => /^model\.b\d+\.mlir$/.test(n)).sort()) {
    modules.push(await readFile(join(examplesDir, model, f)));
  }
}
const rt = await Runtime.create();
const execDir = await mkdtemp(join(tmpdir(), 'hloserve-startup-x-'));
const times = { cold: [], warm: [] };
try {
  for (let r = 1; r <= rounds; r++) {
    for (const kind of ['cold', 'warm']) {
      if (kind === 'cold') await rm(execDir, { recursive: true, force: true });
      const cache = await ExecutableCache.open({ dir: execDir, maxBytes: 2 ** 30 });
      const t = performance.now();
      for (const code of modules)
        (await cache.compile(rt, code, { signature: { parameters: [], results: [] } })).dispose();
      const s = (performance.now() - t) / 1e3;
      times[kind].push(s);
      const st = cache.stats();
      console.log(
        `executables round ${r} ${kind}: ${fmt(s, 3)} s for ${modules.length} modules (compiled ${st.misses}, loaded ${st.hits})`,
      );
    }
  }
} finally {
  rt.dispose();
  await rm(execDir, { recursive: true, force: true });
}
const xc = median(times.cold);
const xw = median(times.warm);
console.log(`median executables: cold ${fmt(xc, 3)} s, warm ${fmt(xw, 3)} s, warm/cold ${fmt(xw / xc, 3)}`);
