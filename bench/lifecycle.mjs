// bench/lifecycle: what a hot reload costs the models that are not being reloaded (issue 12).
//  (a) latency of model A (examples/models/mlp, batch 1, closed loop) alone and while model B (a
//      copy of the same bundle: 5 compiled batch sizes) reloads: p50/p90/p99. B reloads, then rests
//      as long as the reload took, --cycles times; A's requests are split by whether a reload was
//      under way when they started, so "alone" and "during" interleave at the scale of a reload.
//      B's reloads compile every module (the compiled-executable cache is off: a changed bundle
//      compiles). Each round runs in a fresh process; rounds alternate the addon's background
//      priority (HLOSERVE_BACKGROUND_PRIORITY: idle, the default, against normal, i.e. compiles and
//      warmups at the serving threads' priority), so both see the same machine load.
//  (b) 50 reloads of B: process RSS after the first against after the last, and the addon's
//      ledger (live executables and buffers), which must come back to the same counts.
//
// In-process on the real Worker (explicit mode, reloads through Worker.loadModel, the path the
// KServe RepositoryModelLoad RPC and the dynamic-mode watcher take), CPU plugin.
//
// Usage: npm run build && node --expose-gc bench/lifecycle.mjs [--cycles 3] [--concurrency 2]
//          [--rounds 3] [--priorities idle,normal] [--nudges 250,0] [--reloads 50]
// --nudges: build-nudge periods in µs (HLOSERVE_BUILD_NUDGE_US; 0 = off), alternated within each
// priority like the priorities are, so each setting sees the same machine load.
import { spawnSync } from 'node:child_process';
import { PerformanceObserver } from 'node:perf_hooks';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defaultConfig, workerSettings } from '../engine/dist/src/config/node-config.js';
import { createLogger } from '../engine/dist/src/log.js';
import { Worker } from '../engine/dist/src/worker/worker.js';
import { examplesDir } from '../e2e/dist/src/server-process.js';
import { benchEndpoints, ensureServerNodeFlags, fmt, machine, summarize } from './stats.mjs';
import { parseEnvVariants } from './env-variants.mjs';

ensureServerNodeFlags(import.meta.url);

const arg = (name, dflt) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : dflt);
const cycles = Number(arg('--cycles', '3'));
const concurrency = Number(arg('--concurrency', '2'));
const reloads = Number(arg('--reloads', '50'));
const rounds = Number(arg('--rounds', '3'));
const priorities = arg('--priorities', 'idle,normal').split(',');
const nudges = arg('--nudges', '');
// --envs 'name:K=V+K=V;name2:K=V': further variants by environment, crossed with the others.
const envs = parseEnvVariants(arg('--envs', ''));
const variants = priorities
  .flatMap((p) =>
    nudges === '' ? [{ priority: p, nudge: null }] : nudges.split(',').map((n) => ({ priority: p, nudge: n })),
  )
  .flatMap((v) => (envs.length === 0 ? [{ ...v, env: null }] : envs.map((e) => ({ ...v, env: e }))));
const variantName = (v) =>
  `${v.nudge === null ? v.priority : `${v.priority}/nudge=${v.nudge}`}${v.env === null ? '' : `/${v.env.name}`}`;
const child = process.argv.includes('--child');

if (!child) {
  console.log(`# bench/lifecycle - ${machine()}`);
  console.log(
    `# A = mlp (batch 1, ${concurrency} closed-loop callers), B = mlp copy reloaded (compiling), resting as long after each; ${cycles} reloads per round`,
  );
  const script = fileURLToPath(import.meta.url);
  const results = new Map(variants.map((v) => [variantName(v), []]));
  for (let r = 1; r <= rounds; r++) {
    for (const variant of r % 2 === 1 ? variants : [...variants].reverse()) {
      const { priority } = variant;
      const out = spawnSync(
        process.execPath,
        [
          ...process.execArgv,
          script,
          '--child',
          '--cycles',
          String(cycles),
          '--concurrency',
          String(concurrency),
          '--reloads',
          '0',
        ],
        {
          env: {
            ...process.env,
            HLOSERVE_BACKGROUND_PRIORITY: priority,
            ...(variant.nudge === null ? {} : { HLOSERVE_BUILD_NUDGE_US: variant.nudge }),
            ...(variant.env === null ? {} : variant.env.env),
          },
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      );
      const line = out.stdout.split('\n').find((l) => l.startsWith('{'));
      if (!line) throw new Error(`round ${r} (${priority}) printed no result: ${out.stdout}`);
      const res = JSON.parse(line);
      results.get(variantName(variant)).push(res);
      const row = (label, x) =>
        `${label} p50 ${fmt(x.p50)} p90 ${fmt(x.p90)} p99 ${fmt(x.p99)} us (n=${x.n}, failures ${x.failures})`;
      console.log(
        `round ${r} background=${res.applied.padEnd(6)} nudge=${res.nudgeUs}us${variant.env === null ? '' : ` ${variant.env.name}`} ${row('alone', res.alone)} | ${row('during', res.during)} | B reloads ${res.during.background} (${fmt(res.during.reloadS, 1)} s each) | p99 ratio ${fmt(res.during.p99 / res.alone.p99, 2)} p90 ratio ${fmt(res.during.p90 / res.alone.p90, 2)} rps ratio ${fmt(res.during.rps / res.alone.rps, 2)}`,
      );
      const { slow, all } = res.during.where;
      const w = res.during.inWarm;
      console.log(
        `  during B's warmup (${fmt(w.ms, 0)} ms per reload): A served ${fmt(w.n / cycles / Math.max(w.ms / 1e3, 1e-9), 0)}/s (alone ${fmt(res.alone.rps, 0)}/s), over alone's p99 ${fmt((1000 * w.slow) / Math.max(1, w.n), 0)} per 1000 (n=${w.n})`,
      );
      console.log(
        `  slow during requests (over alone's p99) per 1000 by tenth of the reload: ${slow.map((x, i) => fmt((1000 * x) / Math.max(1, all[i]), 0)).join(' ')} | GC ms per s: during ${fmt(res.during.gcMsPerS, 1)}, alone ${fmt(res.alone.gcMsPerS, 1)}`,
      );
    }
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  for (const [p, rs] of results) {
    console.log(
      `median over ${rs.length} rounds, ${p}: p99 ratio ${fmt(median(rs.map((x) => x.during.p99 / x.alone.p99)), 2)}, p90 ratio ${fmt(median(rs.map((x) => x.during.p90 / x.alone.p90)), 2)}, p50 ratio ${fmt(median(rs.map((x) => x.during.p50 / x.alone.p50)), 2)}, rps ratio ${fmt(median(rs.map((x) => x.during.rps / x.alone.rps)), 2)}, reload ${fmt(median(rs.map((x) => x.during.reloadS)), 1)} s`,
    );
  }
  if (reloads === 0) process.exit(0);
}

const repo = mkdtempSync(join(tmpdir(), 'hlo-bench-lifecycle-'));
const reloadPhases = [];
cpSync(join(examplesDir, 'mlp'), join(repo, 'a'), { recursive: true });
cpSync(join(examplesDir, 'mlp'), join(repo, 'b'), { recursive: true });
const base = workerSettings(defaultConfig(repo));
const worker = await Worker.start({
  modelRepo: repo,
  settings: {
    ...base,
    // Off: every reload compiles, as a changed bundle does.
    compileCache: { maxBytes: 0 },
    modelControlMode: 'explicit',
    modelsInclude: ['a', 'b'],
    endpoints: benchEndpoints(base.endpoints),
  },
  // Each reload's phases (the 'model reloaded' line, at info): where its warmup fell.
  log: createLogger('info', {}, (line) => {
    if (line.includes('"model reloaded"')) reloadPhases.push(JSON.parse(line));
    else if (!line.includes('"level":"info"')) process.stderr.write(line);
  }),
});

const x = new Uint8Array(new Float32Array(784).fill(0.25).buffer);
const request = {
  modelName: 'a',
  modelVersion: '',
  id: '',
  parameters: {},
  inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 784], parameters: {}, data: { kind: 'raw', bytes: x } }],
  outputs: [],
};
const ctx = { deadline: null };

/**
 * A's closed loop; meanwhile (when `cycles` > 0) B is reloaded, then left alone for as long as that
 * reload took, `cycles` times; without reloads the loop runs `forSeconds`. Each A request counts
 * as "during" when a reload was under way at its start, else "alone". Interleaving at the scale of
 * one reload lets both sides see the same load from the rest of the machine.
 */
async function measureA(cycles, forSeconds = 0) {
  const samples = { alone: [], during: [] };
  const duringStarts = []; // performance.now() at each "during" request's start
  const perfWindows = []; // each reload's [start, end], performance.now()
  const gcs = []; // [start, duration] ms, every GC while measuring
  const gcObserver = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gcs.push([e.startTime, e.duration]);
  });
  gcObserver.observe({ entryTypes: ['gc'] });
  let failures = 0;
  let stop = false;
  let reloading = false;
  const loop = async () => {
    while (!stop) {
      const during = reloading;
      const t = performance.now();
      try {
        await worker.infer(request, ctx);
        samples[during ? 'during' : 'alone'].push((performance.now() - t) * 1000);
        if (during) duringStarts.push(t);
      } catch {
        failures++;
      }
    }
  };
  const callers = Array.from({ length: concurrency }, loop);
  let background = 0;
  let reloadMs = 0;
  const windows = [];
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const t0 = performance.now();
  if (cycles === 0) await sleep(forSeconds * 1000);
  const warmWindows = []; // each reload's warmup: [start, end], performance.now()
  for (let i = 0; i < cycles; i++) {
    const t = performance.now();
    reloading = true;
    const from = process.hrtime.bigint();
    reloadPhases.length = 0;
    await worker.loadModel('b');
    windows.push([Number(from), Number(process.hrtime.bigint())]);
    perfWindows.push([t, performance.now()]);
    // The warmup ends just before the swap, which is synchronous with the reload's end.
    const warm = reloadPhases[0]?.warmupSeconds;
    if (warm !== undefined) warmWindows.push([performance.now() - warm * 1000, performance.now()]);
    reloading = false;
    background++;
    reloadMs += performance.now() - t;
    await sleep(performance.now() - t);
  }
  stop = true;
  await Promise.all(callers);
  gcObserver.disconnect();
  // Where in a reload A's slow requests fell (over alone's p99; by tenth of the reload window):
  // at its ends, the JS thread's share of a reload (file reads, weight upload, the swap); spread
  // evenly, the compile beside serving. And the GC time on each side.
  const aloneP99 = summarize(samples.alone).p99;
  const where = { slow: new Array(10).fill(0), all: new Array(10).fill(0) };
  duringStarts.forEach((t, i) => {
    const w = perfWindows.find(([a, b]) => t >= a && t <= b);
    if (!w) return;
    const bin = Math.min(9, Math.floor((10 * (t - w[0])) / (w[1] - w[0])));
    where.all[bin]++;
    if (samples.during[i] > aloneP99) where.slow[bin]++;
  });
  // A's requests that started during B's warmup (its first runs of the new executables).
  const inWarm = {
    n: 0,
    slow: 0,
    ms: warmWindows.reduce((x, [a, b]) => x + b - a, 0) / Math.max(1, warmWindows.length),
  };
  duringStarts.forEach((t, i) => {
    if (!warmWindows.some(([a, b]) => t >= a && t <= b)) return;
    inWarm.n++;
    if (samples.during[i] > aloneP99) inWarm.slow++;
  });
  const inReload = (t) => perfWindows.some(([a, b]) => t >= a && t <= b);
  const gcMs = (during) => gcs.filter(([t]) => inReload(t) === during).reduce((x, [, d]) => x + d, 0);
  // Requests per second on each side: a reload that leaves serving fewer CPUs shows here.
  const aloneS = (performance.now() - t0 - reloadMs) / 1e3;
  return {
    alone: { ...summarize(samples.alone), failures, rps: samples.alone.length / aloneS },
    during: {
      ...summarize(samples.during),
      rps: reloadMs > 0 ? samples.during.length / (reloadMs / 1e3) : 0,
      failures,
      background,
      reloadS: background ? reloadMs / background / 1e3 : 0,
      where,
      inWarm,
      gcMsPerS: reloadMs > 0 ? gcMs(true) / (reloadMs / 1e3) : 0,
    },
    gcMsPerS: gcMs(false) / aloneS,
    windows,
  };
}

/**
 * This process's threads: tid -> scheduling policy (field 41 of /proc/self/task/<tid>/stat; 5 =
 * SCHED_IDLE, 3 = SCHED_BATCH), or -19 for a SCHED_OTHER thread at nice 19 (builds under
 * HLOSERVE_BACKGROUND_PRIORITY=nice).
 */
function processThreads() {
  const out = {};
  for (const tid of readdirSync('/proc/self/task')) {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    out[tid] = fields[38] === '0' && fields[16] === '19' ? -19 : Number(fields[38]);
  }
  return out;
}

const rss = () => process.memoryUsage().rss;
const settle = async () => {
  for (let i = 0; i < 3; i++) {
    globalThis.gc?.();
    await new Promise((r) => setTimeout(r, 50));
  }
};

if (child) {
  await measureA(0, 3); // warm
  const { alone, during, windows, gcMsPerS } = await measureA(cycles);
  const { Runtime } = await import('../native/dist/lib/index.js');
  console.log(
    JSON.stringify({
      applied: Runtime.backgroundPriority,
      nudgeUs: Runtime.buildNudgeMicros ?? 0,
      alone: { ...alone, gcMsPerS },
      during,
      // For bench/reload-waits.mjs, which traces the scheduler around this child: the reload
      // windows (CLOCK_MONOTONIC ns) and the process's threads, the SCHED_IDLE ones apart.
      windows,
      pid: process.pid,
      threads: processThreads(),
    }),
  );
  await worker.stop(false);
  rmSync(repo, { recursive: true, force: true });
  process.exit(0);
}

await worker.loadModel('b');
await settle();
const first = rss();
const ledger0 = worker.runtime.ledger();
// The trajectory, every tenth of the run: a plateau (allocator and JIT warm-up) reads differently
// from a climb that goes on (a leak).
const trajectory = [];
// RSS split three ways, so a climb can be told apart: the JS heap V8 holds, array buffers
// (tensors, file reads), and the rest (native: the addon, XLA, malloc's arenas, code).
const memoryParts = () => {
  const m = process.memoryUsage();
  const mib = (x) => fmt(x / 2 ** 20, 0);
  return `heap ${mib(m.heapTotal)} ab ${mib(m.arrayBuffers)} native ${mib(m.rss - m.heapTotal - m.arrayBuffers)}`;
};
const parts = [`1:${memoryParts()}`];
let busyMs = 0;
for (let i = 0; i < reloads; i++) {
  const t = performance.now();
  await worker.loadModel('b');
  busyMs += performance.now() - t;
  if ((i + 1) % Math.max(1, Math.round(reloads / 10)) === 0) {
    await settle();
    trajectory.push(`${i + 1}:${fmt(rss() / 2 ** 20, 0)}`);
    parts.push(`${i + 1}:${memoryParts()}`);
  }
}
const perReload = busyMs / reloads;
await settle();
const last = rss();
const ledger1 = worker.runtime.ledger();
console.log(
  `(b) ${reloads} reloads (${fmt(perReload, 0)} ms each): RSS after the first ${fmt(first / 2 ** 20)} MiB, after the last ${fmt(last / 2 ** 20)} MiB (${fmt((last / first - 1) * 100, 1)} %)`,
);
console.log(`(b) RSS (MiB) after reload n: ${trajectory.join(' ')}`);
console.log(`(b) RSS parts (MiB) after reload n: ${parts.join(', ')}`);
console.log(`(b) addon ledger after the first: ${JSON.stringify(ledger0)}`);
console.log(`(b) addon ledger after the last:  ${JSON.stringify(ledger1)}`);
await worker.stop(false);
rmSync(repo, { recursive: true, force: true });
