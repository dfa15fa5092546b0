// bench/peers: hloserve against Seldon MLServer and KServe's Python ModelServer serving the same
// program (examples/models/mlp's batch-1 StableHLO, compiled through jax's own XLA by
// hlo_program.py), plus a canned-answer gRPC server as the floor. One generator for all: the
// project's client over gRPC in this process, closed loop at concurrency 1 and 16, rounds
// interleaved across the servers (this VM drifts within minutes); medians and each round printed.
//
//   bash bench/peers/setup.sh            # venvs under .cache/peers (pip, from PyPI)
//   npm run build && nice -n 10 node bench/peers/run.mjs [--seconds 5] [--rounds 3] [--only hloserve,canned,...]
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { InferenceClient } from '../../client/dist/src/index.js';
import { startServer } from '../../e2e/dist/src/server-process.js';
import { machine, percentile } from '../stats.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '..', '..');
const bundle = join(root, 'examples', 'models', 'mlp');
const venvs = join(root, '.cache', 'peers');
const flag = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i < 0 ? fallback : process.argv[i + 1];
};
const seconds = Number(flag('--seconds', '5'));
const rounds = Number(flag('--rounds', '3'));
const only = flag('--only', 'canned,hloserve,kserve,mlserver').split(',');
const concurrencies = [1, 16];
const tmp = mkdtempSync(join(tmpdir(), 'hlo-peers-'));
let nextPort = 18000 + (process.pid % 1000) * 10;

function child(cmd, args, opts = {}) {
  const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], ...opts });
  const logs = [];
  for (const s of [p.stdout, p.stderr]) s.on('data', (d) => logs.push(String(d)));
  const exited = new Promise((r) => p.once('exit', r));
  return { p, logs, exited, stop: async () => (p.exitCode === null && p.kill('SIGTERM'), exited) };
}

async function waitReady(url, proc, what) {
  const c = new InferenceClient({ url, retry: false, timeoutMs: 2000 });
  try {
    for (let i = 0; i < 240; i++) {
      if (proc.p.exitCode !== null) throw new Error(`${what} exited ${proc.p.exitCode}:\n${proc.logs.join('')}`);
      const ok = await c
        .model('mlp')
        .ready()
        .catch(() => false);
      if (ok) return;
      await new Promise((r) => setTimeout(r, 500));
    }
    throw new Error(`${what} not ready in 120 s:\n${proc.logs.join('')}`);
  } finally {
    await c.close();
  }
}

const starters = {
  async canned() {
    const port = nextPort++;
    const proc = child(process.execPath, [join(here, 'canned.mjs'), String(port)], { cwd: root });
    const url = `127.0.0.1:${port}`;
    await waitReady(url, proc, 'canned');
    return { url, stop: proc.stop, logs: proc.logs };
  },
  async hloserve() {
    const s = await startServer({ HLOSERVE_MODELS_INCLUDE: 'mlp' });
    return { url: s.grpcUrl(), stop: () => s.stop() };
  },
  async mlserver() {
    const dir = join(tmp, 'mlserver');
    mkdirSync(join(dir, 'mlp'), { recursive: true });
    const [grpc, http, metrics] = [nextPort++, nextPort++, nextPort++];
    writeFileSync(
      join(dir, 'settings.json'),
      JSON.stringify({ grpc_port: grpc, http_port: http, metrics_port: metrics }),
    );
    writeFileSync(
      join(dir, 'mlp', 'model-settings.json'),
      JSON.stringify({ name: 'mlp', implementation: 'mlserver_model.HloModel', parameters: { uri: bundle } }),
    );
    const proc = child(join(venvs, 'mlserver', 'bin', 'mlserver'), ['start', dir], {
      cwd: here,
      env: { ...process.env, PYTHONPATH: here },
    });
    const url = `127.0.0.1:${grpc}`;
    await waitReady(url, proc, 'mlserver');
    return { url, stop: proc.stop, logs: proc.logs };
  },
  async kserve() {
    const [grpc, http] = [nextPort++, nextPort++];
    const proc = child(
      join(venvs, 'kserve', 'bin', 'python'),
      [join(here, 'kserve_model.py'), bundle, String(grpc), String(http)],
      { cwd: here, env: { ...process.env, PYTHONPATH: here } },
    );
    const url = `127.0.0.1:${grpc}`;
    await waitReady(url, proc, 'kserve');
    return { url, stop: proc.stop, logs: proc.logs };
  },
};

const x = new Float32Array(784).fill(0.5);
async function closedLoop(url, c, secs) {
  const client = new InferenceClient({ url, retry: false, timeoutMs: 10_000 });
  const mlp = client.model('mlp');
  const lat = [];
  const end = performance.now() + secs * 1e3;
  try {
    await Promise.all(
      Array.from({ length: c }, async () => {
        while (performance.now() < end) {
          const t = performance.now();
          await mlp.infer({ x: { datatype: 'FP32', shape: [1, 784], data: x } });
          lat.push((performance.now() - t) * 1e3);
        }
      }),
    );
  } finally {
    await client.close();
  }
  lat.sort((a, b) => a - b);
  return { rps: lat.length / secs, p50: percentile(lat, 50), p99: percentile(lat, 99) };
}

const names = Object.keys(starters).filter((n) => only.includes(n));
const results = new Map(names.map((n) => [n, new Map(concurrencies.map((c) => [c, []]))]));
console.log(`# bench/peers, machine: ${machine()}; ${seconds} s per point, ${rounds} round(s) interleaved`);
try {
  for (let k = 0; k < rounds; k++) {
    for (const n of names) {
      const s = await starters[n]();
      try {
        await closedLoop(s.url, 4, 1); // warm-up
        for (const c of concurrencies)
          results
            .get(n)
            .get(c)
            .push(await closedLoop(s.url, c, seconds));
      } catch (err) {
        console.error(`${n} failed; its log ends:\n${(s.logs ?? []).join('').slice(-3000)}`);
        throw err;
      } finally {
        await s.stop();
      }
    }
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
const med = (rs, key) => [...rs].map((r) => r[key]).sort((a, b) => a - b)[Math.floor((rs.length - 1) / 2)];
console.log(
  '| server | callers | infer/s (median) | each round | p50 µs | p99 µs | hloserve infer/s ÷ this, per round |',
);
console.log('|---|---|---|---|---|---|---|');
for (const c of concurrencies) {
  for (const n of names) {
    const rs = results.get(n).get(c);
    const h = results.get('hloserve')?.get(c);
    const ratios = h && n !== 'hloserve' ? rs.map((r, i) => (h[i].rps / r.rps).toFixed(2)).join(' ') : '';
    console.log(
      `| ${n} | ${c} | ${med(rs, 'rps').toFixed(0)} | ${rs.map((r) => r.rps.toFixed(0)).join(' ')} | ${med(rs, 'p50').toFixed(0)} | ${med(rs, 'p99').toFixed(0)} | ${ratios} |`,
    );
  }
}
