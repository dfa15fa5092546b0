// bench/hooks-grpc: a pass-through pre+post hook against none over a real socket, for one or more
// engine builds side by side. bench/hooks-ab.mjs drives the Worker in process, where the requests of
// a closed loop come back to it in one burst; over gRPC each request is read from the socket in a
// callback of its own, which is what decides how many share a hand-over to a hook thread.
//
// Each build runs in this process: its Worker serves the mlp example as is ("mlp") and with
// `preprocess(t) { return t }` / `postprocess(t) { return t }` ("mlp-hooked") on a gRPC port of its
// own; perf_analyzer (closed loop, --c callers) measures each (build, model) for --seconds, the order
// rotating each round. Prints throughput, p50, the mean batch (the model's own statistics), and the
// hook pool's hand-overs, wakes of a sleeping thread, waits and notes per request (Worker.hookPoolCounters;
// "n/a" for a build without), and this process's CPU per request and cores while serving each.
//
//   npm run build && node bench/hooks-grpc.mjs dist [dist-before ...] [--c 16] [--seconds 4] [--rounds 2]
//   (perf_analyzer from HLOSERVE_PERF_ANALYZER / HLOSERVE_PERF_ANALYZER_LD_PATH)
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { grpcLoadArgs, perfAnalyzerBinary, perfAnalyzerEnv } from '../e2e/dist/src/perf-analyzer.js';

const here = dirname(fileURLToPath(import.meta.url));
const examples = join(here, '..', 'examples', 'models');
const args = process.argv.slice(2);
const valued = ['--c', '--seconds', '--rounds'];
const flag = (name, fallback) => {
  const i = args.indexOf(name);
  return i < 0 ? fallback : Number(args[i + 1]);
};
const concurrency = flag('--c', 16);
const seconds = flag('--seconds', 4);
const rounds = flag('--rounds', 2);
const builds = args.filter((a, i) => !a.startsWith('--') && !(i > 0 && valued.includes(args[i - 1])));
if (builds.length === 0) builds.push('dist');
const paBin = perfAnalyzerBinary();
const paEnv = perfAnalyzerEnv();
const models = ['mlp', 'mlp-hooked'];

const repo = mkdtempSync(join(tmpdir(), 'hloserve-bench-hooks-grpc-'));
for (const m of models) cpSync(join(examples, 'mlp'), join(repo, m), { recursive: true });
writeFileSync(
  join(repo, 'mlp-hooked', 'model.mjs'),
  'export function preprocess(t) { return t; }\nexport function postprocess(t) { return t; }\n',
);

const servers = {};
for (const b of builds) {
  const load = (path) => import(pathToFileURL(join(here, '..', 'engine', b, 'src', path)).href);
  const { defaultConfig, workerSettings } = await load('config/node-config.js');
  const { createLogger } = await load('log.js');
  const { Worker } = await load('worker/worker.js');
  // Builds before session 13 kept the transports in src/kserve.
  const { startGrpcServer } = await load('transports/grpc-server.js').catch(() => load('kserve/grpc-server.js'));
  const settings = workerSettings(defaultConfig(repo));
  const worker = await Worker.start({
    modelRepo: repo,
    settings: { ...settings, cacheDir: join(repo, `.state-${b}`) },
    log: createLogger('silent'),
  });
  servers[b] = { worker, grpc: await startGrpcServer(worker, '127.0.0.1', 0) };
}

/** perf_analyzer for about `seconds`: three windows, any spread accepted (a fixed time, whatever the speed). */
function perf(port, model) {
  return new Promise((resolve, reject) => {
    const p = spawn(
      paBin,
      [
        ...grpcLoadArgs(model, `127.0.0.1:${port}`, concurrency),
        ...['--measurement-interval', String((seconds * 1000) / 3)],
        ...['--stability-percentage', '1000'],
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], env: paEnv },
    );
    let out = '';
    for (const s of [p.stdout, p.stderr]) s.on('data', (d) => (out += d));
    p.once('exit', (code) => {
      const rps = Number(/Throughput: ([\d.]+) infer\/sec/.exec(out)?.[1]);
      const p50 = Number(/p50 latency: (\d+) usec/.exec(out)?.[1]);
      if (code !== 0 || !Number.isFinite(rps)) reject(new Error(`perf_analyzer exited ${code}:\n${out}`));
      else resolve({ rps, p50 });
    });
  });
}

async function point(b, model) {
  const { worker, grpc } = servers[b];
  const stats = () => worker.modelStatistics(model, '')[0];
  const counters = () => worker.hookPoolCounters ?? null;
  const [s0, c0] = [stats(), counters()];
  // perf_analyzer is another process, and the other builds are idle meanwhile: this process's CPU
  // is this build's serving of this model.
  const [cpu0, t0] = [process.cpuUsage(), performance.now()];
  const r = await perf(grpc.port, model);
  const [cpu, wall] = [process.cpuUsage(cpu0), performance.now() - t0];
  const [s1, c1] = [stats(), counters()];
  const n = s1.inference_stats.success.count - s0.inference_stats.success.count;
  const per = (k) => (c0 === null ? NaN : (c1[k] - c0[k]) / n);
  return {
    ...r,
    batch: n / (s1.execution_count - s0.execution_count),
    handoffs: per('handoffs'),
    wakes: per('wakes'),
    notes: per('laneNotes'),
    waits: per('waits'),
    cpuPerReq: (cpu.user + cpu.system) / n,
    cores: (cpu.user + cpu.system) / 1000 / wall,
  };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const cells = builds.flatMap((b) => models.map((m) => [b, m]));
const res = {};
console.log(`hooks-grpc: perf_analyzer, c=${concurrency}, ${rounds} rounds of ${seconds} s per build and model`);
for (let r = 0; r < rounds; r++)
  for (const [b, m] of cells.map((_, i) => cells[(i + r) % cells.length]))
    (res[`${b} ${m}`] ??= []).push(await point(b, m));
for (const b of builds)
  for (const m of models) {
    const v = res[`${b} ${m}`];
    const med = (k) => median(v.map((x) => x[k]));
    const ratio = median(v.map((x, i) => x.rps / res[`${b} mlp`][i].rps));
    const hand = Number.isNaN(med('handoffs'))
      ? 'n/a'
      : `${med('handoffs').toFixed(2)} hand-overs, ${med('wakes').toFixed(2)} wakes, ${med('waits').toFixed(2)} waited, ${med('notes').toFixed(2)} notes`;
    // The added p50 is taken round by round against the same build's plain model, then the median.
    const added = median(v.map((x, i) => x.p50 - res[`${b} mlp`][i].p50));
    console.log(
      `  ${b.padEnd(12)} ${m.padEnd(11)} ${med('rps').toFixed(0)} infer/s (${(ratio * 100).toFixed(0)} % of plain)  p50 ${med('p50')} µs${m === 'mlp' ? '' : ` (+${added})`}  mean batch ${med('batch').toFixed(2)}  CPU ${med('cpuPerReq').toFixed(0)} µs/req, ${med('cores').toFixed(2)} cores  ${m === 'mlp' ? '' : `per request: ${hand}`}`,
    );
    if (process.env.HOOKS_BENCH_JSON)
      console.log(JSON.stringify({ build: b, model: m, c: concurrency, rps: med('rps'), p50: med('p50'), ratio }));
  }
for (const { worker, grpc } of Object.values(servers)) {
  await grpc.close(1000);
  await worker.stop(false);
}
rmSync(repo, { recursive: true, force: true });
