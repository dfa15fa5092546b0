// bench/peers: hloserve against Seldon MLServer and KServe's Python ModelServer serving the same
// program (examples/models/mlp's batch-1 StableHLO, compiled through jax's own XLA by
// hlo_program.py), plus a canned-answer gRPC server as the floor.
//
// One native generator for all: Triton's perf_analyzer over gRPC (KServe V2; the peers get
// Triton's ModelConfig RPC added by model_config_rpc.py, since perf_analyzer asks for it), closed
// loop at concurrency 1 and 16. The server under test runs on cpu 0 and perf_analyzer on cpu 1
// (taskset), so the generator never takes the server's core; one server runs at a time, each
// round starts each server fresh, and rounds interleave the servers (this VM drifts within
// minutes). Each point is three perf_analyzer time windows (about --seconds in all) after a short
// warm-up at concurrency 16. The server's CPU time per request is read from /proc (its whole process tree:
// MLServer infers in a worker process).
//
//   bash bench/peers/setup.sh            # venvs under .cache/peers (pip, from PyPI)
//   export HLOSERVE_PERF_ANALYZER=... HLOSERVE_PERF_ANALYZER_LD_PATH=...   (node scripts/setup-tests.mjs perf-analyzer prints them)
//   npm run build && node bench/peers/run.mjs [--seconds 4] [--rounds 3] [--only canned,hloserve,kserve,mlserver]
//       [--server-cpu 0] [--generator-cpu 1]
import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { InferenceClient } from '../../client/dist/src/index.js';
import { perfAnalyzerBinary } from '../../e2e/dist/src/perf-analyzer.js';
import { SERVER_NODE_FLAGS } from '../../engine/dist/src/node-flags.js';
import { machine } from '../stats.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '..', '..');
const bundle = join(root, 'examples', 'models', 'mlp');
const venvs = join(root, '.cache', 'peers');
const flag = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i < 0 ? fallback : process.argv[i + 1];
};
const seconds = Number(flag('--seconds', '4'));
const rounds = Number(flag('--rounds', '3'));
const only = flag('--only', 'canned,hloserve,kserve,mlserver').split(',');
const serverCpu = flag('--server-cpu', '0');
const generatorCpu = flag('--generator-cpu', '1');
const concurrencies = [1, 16];
const tmp = mkdtempSync(join(tmpdir(), 'hlo-peers-'));
let nextPort = 18000 + (process.pid % 1000) * 10;

const paLib = process.env.HLOSERVE_PERF_ANALYZER_LD_PATH;
if (!paLib)
  throw new Error('set HLOSERVE_PERF_ANALYZER_LD_PATH (node scripts/setup-tests.mjs perf-analyzer prints it)');
const paBin = perfAnalyzerBinary();
const TICK_US = 10_000; // /proc/<pid>/stat counts in 10 ms ticks (CLK_TCK 100)

/** Starts `cmd` on the server's core; its output goes to a file (no pipe the bench must drain). */
function child(name, cmd, args, opts = {}) {
  const log = join(tmp, `${name}-${nextPort}.log`);
  const fd = openSync(log, 'w');
  const p = spawn('taskset', ['-c', serverCpu, cmd, ...args], { stdio: ['ignore', fd, fd], ...opts });
  closeSync(fd);
  const exited = new Promise((r) => p.once('exit', r));
  return {
    p,
    logs: () => readFileSync(log, 'utf8'),
    stop: async () => (p.exitCode === null && p.kill('SIGTERM'), exited),
  };
}

/** User + system CPU ticks of a process and all its descendants. */
function treeTicks(pid) {
  const stats = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const f = readFileSync(`/proc/${d}/stat`, 'utf8').split(') ')[1].split(' ');
      stats.push({ pid: Number(d), ppid: Number(f[1]), ticks: Number(f[11]) + Number(f[12]) });
    } catch {
      /* exited meanwhile */
    }
  }
  const inTree = new Set([pid]);
  for (let grew = true; grew;) {
    grew = false;
    for (const s of stats)
      if (!inTree.has(s.pid) && inTree.has(s.ppid)) {
        inTree.add(s.pid);
        grew = true;
      }
  }
  return stats.filter((s) => inTree.has(s.pid)).reduce((a, s) => a + s.ticks, 0);
}

async function waitReady(url, proc, what) {
  const c = new InferenceClient({ url, retry: false, timeoutMs: 2000 });
  try {
    for (let i = 0; i < 240; i++) {
      if (proc.p.exitCode !== null) throw new Error(`${what} exited ${proc.p.exitCode}:\n${proc.logs()}`);
      const ok = await c
        .model('mlp')
        .ready()
        .catch(() => false);
      if (ok) return;
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`${what} not ready in 60 s:\n${proc.logs()}`);
  } finally {
    await c.close();
  }
}

const starters = {
  async canned() {
    const port = nextPort++;
    const proc = child('canned', process.execPath, [join(here, 'canned.mjs'), String(port)], { cwd: root });
    const url = `127.0.0.1:${port}`;
    await waitReady(url, proc, 'canned');
    return { url, proc };
  },
  async hloserve() {
    const [grpc, http] = [nextPort++, nextPort++];
    const proc = child(
      'hloserve',
      process.execPath,
      [
        ...SERVER_NODE_FLAGS,
        join(root, 'engine', 'dist', 'src', 'cli.js'),
        'serve',
        '--config',
        join(root, 'examples', 'node.yaml'),
      ],
      {
        cwd: root,
        env: {
          ...process.env,
          HLOSERVE_MODELS_INCLUDE: 'mlp',
          HLOSERVE_ENDPOINTS_GRPC_PORT: String(grpc),
          HLOSERVE_ENDPOINTS_HTTP_PORT: String(http),
          HLOSERVE_ENDPOINTS_METRICS_PORT: '0',
          HLOSERVE_ENDPOINTS_CONSOLE_PORT: '0',
          TF_CPP_MIN_LOG_LEVEL: '2',
        },
      },
    );
    const url = `127.0.0.1:${grpc}`;
    await waitReady(url, proc, 'hloserve');
    return { url, proc };
  },
  async mlserver() {
    const dir = join(tmp, `mlserver-${nextPort}`);
    mkdirSync(join(dir, 'mlp'), { recursive: true });
    const [grpc, http, metrics] = [nextPort++, nextPort++, nextPort++];
    writeFileSync(
      join(dir, 'settings.json'),
      JSON.stringify({ grpc_port: grpc, http_port: http, metrics_port: metrics }),
    );
    writeFileSync(
      join(dir, 'mlp', 'model-settings.json'),
      JSON.stringify({
        name: 'mlp',
        implementation: 'mlserver_model.HloModel',
        parameters: { uri: bundle },
        // perf_analyzer builds its request from the metadata: the same shapes every server reports.
        inputs: [{ name: 'x', datatype: 'FP32', shape: [-1, 784] }],
        outputs: [{ name: 'logits', datatype: 'FP32', shape: [-1, 10] }],
      }),
    );
    const proc = child(
      'mlserver',
      join(venvs, 'mlserver', 'bin', 'python'),
      [join(here, 'mlserver_start.py'), 'start', dir],
      {
        cwd: here,
        env: { ...process.env, PYTHONPATH: here },
      },
    );
    const url = `127.0.0.1:${grpc}`;
    await waitReady(url, proc, 'mlserver');
    return { url, proc };
  },
  async kserve() {
    const [grpc, http] = [nextPort++, nextPort++];
    const proc = child(
      'kserve',
      join(venvs, 'kserve', 'bin', 'python'),
      [join(here, 'kserve_model.py'), bundle, String(grpc), String(http)],
      { cwd: here, env: { ...process.env, PYTHONPATH: here } },
    );
    const url = `127.0.0.1:${grpc}`;
    await waitReady(url, proc, 'kserve');
    return { url, proc };
  },
};

/**
 * perf_analyzer on the generator's core, closed loop at concurrency `c`: three time windows of
 * `windowMs` (a stability threshold of 1000 % accepts the first three, so a point lasts a fixed
 * time whatever the server's speed; --request-count is no use here, it reports at least one
 * second's worth of time however few requests it sends).
 */
function perf(url, c, windowMs) {
  return new Promise((resolve_, reject) => {
    const p = spawn(
      'taskset',
      [
        '-c',
        generatorCpu,
        paBin,
        '-m',
        'mlp',
        '-u',
        url,
        '-i',
        'grpc',
        '--concurrency-range',
        String(c),
        '--measurement-interval',
        String(windowMs),
        '--stability-percentage',
        '1000',
      ],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, LD_LIBRARY_PATH: [paLib, process.env.LD_LIBRARY_PATH].filter(Boolean).join(':') },
      },
    );
    let out = '';
    for (const s of [p.stdout, p.stderr]) s.on('data', (d) => (out += d));
    p.once('exit', (code) => {
      const num = (re) => Number(re.exec(out)?.[1] ?? NaN);
      const row = {
        count: num(/Request count: (\d+)/),
        rps: num(/Throughput: ([\d.]+) infer\/sec/),
        p50: num(/p50 latency: (\d+) usec/),
        p99: num(/p99 latency: (\d+) usec/),
      };
      if (code !== 0 || !Number.isFinite(row.rps)) reject(new Error(`perf_analyzer exited ${code}:\n${out}`));
      else resolve_(row);
    });
  });
}

async function measure(s, c) {
  const before = treeTicks(s.proc.p.pid);
  const row = await perf(s.url, c, Math.round((seconds * 1000) / 3));
  // The run's few requests outside the measured windows ride on `count`: close enough per request.
  const cpuUs = ((treeTicks(s.proc.p.pid) - before) * TICK_US) / row.count;
  return { ...row, cpuUs };
}

const names = Object.keys(starters).filter((n) => only.includes(n));
const results = new Map(names.map((n) => [n, new Map(concurrencies.map((c) => [c, []]))]));
const t0 = performance.now();
console.log(
  `# bench/peers, machine: ${machine()}; perf_analyzer on cpu ${generatorCpu}, server on cpu ${serverCpu}; ~${seconds} s per point, ${rounds} round(s) interleaved`,
);
try {
  for (let k = 0; k < rounds; k++) {
    // Rotate the order each round so no server always runs first.
    for (let j = 0; j < names.length; j++) {
      const n = names[(j + k) % names.length];
      const s = await starters[n]();
      try {
        await perf(s.url, 16, 200); // warm-up: caches, JIT, the peers' lazy paths
        for (const c of concurrencies)
          results
            .get(n)
            .get(c)
            .push(await measure(s, c));
      } catch (err) {
        console.error(`${n} failed; its log ends:\n${s.proc.logs().slice(-3000)}`);
        throw err;
      } finally {
        await s.proc.stop();
      }
    }
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
const spread = (xs) => `${Math.min(...xs).toFixed(2)}-${Math.max(...xs).toFixed(2)}`;
console.log(`\n(${((performance.now() - t0) / 1000).toFixed(0)} s in all)\n`);
console.log(
  '| server | callers | infer/s (median) | each round | p50 µs | p99 µs | server CPU µs/infer | hloserve infer/s ÷ this: median (range) | this p99 ÷ hloserve p99: median (range) |',
);
console.log('|---|---|---|---|---|---|---|---|---|');
for (const c of concurrencies) {
  for (const n of names) {
    const rs = results.get(n).get(c);
    const h = results.get('hloserve')?.get(c);
    const other = h && n !== 'hloserve';
    const tput = other ? rs.map((r, i) => h[i].rps / r.rps) : [];
    const p99 = other ? rs.map((r, i) => r.p99 / h[i].p99) : [];
    console.log(
      `| ${n} | ${c} | ${med(rs.map((r) => r.rps)).toFixed(0)} | ${rs.map((r) => r.rps.toFixed(0)).join(' ')} | ${med(rs.map((r) => r.p50))} | ${med(rs.map((r) => r.p99))} | ${med(rs.map((r) => r.cpuUs)).toFixed(0)} | ${other ? `${med(tput).toFixed(2)} (${spread(tput)})` : ''} | ${other ? `${med(p99).toFixed(2)} (${spread(p99)})` : ''} |`,
    );
  }
}
const canned1 = results.get('canned')?.get(1);
const hlo1 = results.get('hloserve')?.get(1);
if (canned1 && hlo1) {
  const over = hlo1.map((r, i) => r.p50 - canned1[i].p50);
  console.log(
    `\nhloserve p50 over the canned floor at one caller, per round: ${over.join(' ')} µs (median ${med(over)}); floor p50 ${med(canned1.map((r) => r.p50))} µs`,
  );
}
const hc = results.get('hloserve');
if (hc) {
  const r = hc.get(1).map((x, i) => x.cpuUs / hc.get(16)[i].cpuUs);
  console.log(`hloserve CPU per request, c=1 ÷ c=16, per round: ${r.map((x) => x.toFixed(2)).join(' ')}`);
}
