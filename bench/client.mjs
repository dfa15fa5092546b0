// bench/client: @hloserve/client against tritonclient's Python gRPC client on the same model
// (mlp, 1 row per request) at concurrency 1 and 16, then one 64 MiB FP32 tensor each way through
// the client's shared-memory path against inline (gRPC and HTTP), on the `scale` bundle (y = 2x on
// 4096x4096, written by bench/client_scale_bundle.py into a temporary repository).
// Usage: npm run build && nice -n 10 node bench/client.mjs [--seconds 5] [--rounds 3] [--big-iters 10] [--skip-big]
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { InferenceClient, tensor } from '../client/dist/src/index.js';
import { runCaptured } from '../e2e/dist/src/run-captured.js';
import { repoRoot, startServer } from '../e2e/dist/src/server-process.js';
import { arg, fmt, machine, summarize } from './stats.mjs';

const seconds = Number(arg('seconds', '5'));
const bigIters = Number(arg('big-iters', '10'));
const rounds = Number(arg('rounds', '3'));
const skipBig = process.argv.includes('--skip-big');
const python = process.env.PYTHON ?? 'python3';

console.log(
  `# bench/client, machine: ${machine()}, load average ${loadavg()
    .map((x) => x.toFixed(1))
    .join(' ')}`,
);

/** C loops in this process, each awaiting its own infer back to back, for `secs` after a warm-up. */
async function driveTs(client, c, secs) {
  const mlp = client.model('mlp');
  const x = { x: tensor(new Float32Array(784).fill(0.5), [1, 784]) };
  await Promise.all(
    Array.from({ length: c }, async () => {
      for (let i = 0; i < 20; i++) await mlp.infer(x);
    }),
  );
  const lat = [];
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const stopAt = t0 + secs * 1000;
  await Promise.all(
    Array.from({ length: c }, async () => {
      for (;;) {
        const t = performance.now();
        if (t >= stopAt) return;
        await mlp.infer(x);
        lat.push((performance.now() - t) * 1000);
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  return { requests: lat.length, seconds, cpuSeconds: (cpu.user + cpu.system) / 1e6, lat };
}

async function withTs(opts, c) {
  const client = new InferenceClient(opts);
  try {
    return await driveTs(client, c, seconds);
  } finally {
    await client.close();
  }
}

// Not spawnSync: this process reads the server's log pipes, which must not fill while it waits.
async function drivePython(url, c, secs) {
  const r = await runCaptured(
    python,
    [join(repoRoot, 'bench', 'client_tritonclient.py'), url, 'mlp', 'x', '1', '784', String(c), String(secs)],
    { timeoutMs: (secs + 120) * 1000 },
  );
  if (r.status !== 0) throw new Error(`client_tritonclient.py exited ${r.status}: ${r.stderr}`);
  const j = JSON.parse(r.stdout.trim().split('\n').pop());
  return { requests: j.requests, seconds: j.seconds, cpuSeconds: j.cpu_seconds, lat: j.latencies_us };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// 1. Throughput on mlp, 1 row per request. The three clients take turns (the order rotates each
// round) so a change in the machine's load hits them alike; each cell reports the median round.
{
  const server = await startServer({ HLOSERVE_MODELS_INCLUDE: 'mlp' });
  try {
    const clients = [
      ['@hloserve/client gRPC', (c) => withTs({ url: server.grpcUrl() }, c)],
      ['tritonclient.grpc (Python)', (c) => drivePython(server.grpcUrl(), c, seconds)],
      ['@hloserve/client HTTP binary', (c) => withTs({ url: server.httpUrl(), protocol: 'http' }, c)],
    ];
    console.log(`\n## mlp, 1 row per request, ${seconds} s per cell, ${rounds} rounds\n`);
    console.log(
      '| client | concurrency | infer/s (median) | infer/s per round | p50 ms | p99 ms | client CPU µs/infer |',
    );
    console.log('|---|---|---|---|---|---|---|');
    for (const c of [1, 16]) {
      const results = new Map(clients.map(([label]) => [label, []]));
      for (let r = 0; r < rounds; r++) {
        for (let k = 0; k < clients.length; k++) {
          const [label, drive] = clients[(k + r) % clients.length];
          results.get(label).push(await drive(c));
        }
      }
      for (const [label] of clients) {
        const rs = results.get(label);
        const rates = rs.map((x) => x.requests / x.seconds);
        const s = summarize(rs.flatMap((x) => x.lat));
        const cpu = median(rs.map((x) => (x.cpuSeconds / x.requests) * 1e6));
        console.log(
          `| ${label} | ${c} | ${fmt(median(rates), 0)} | ${rates.map((x) => fmt(x, 0)).join(', ')} | ${fmt(s.p50 / 1000, 2)} | ${fmt(s.p99 / 1000, 2)} | ${fmt(cpu, 0)} |`,
        );
      }
    }
  } finally {
    await server.stop();
  }
}

// 2. One 64 MiB tensor in and 64 MiB out: pooled shared memory against inline.
if (!skipBig) {
  const repo = mkdtempSync(join(tmpdir(), 'hloserve-client-bench-'));
  try {
    const exp = spawnSync(python, [join(repoRoot, 'bench', 'client_scale_bundle.py'), join(repo, 'scale')], {
      encoding: 'utf8',
    });
    if (exp.status !== 0) throw new Error(`client_scale_bundle.py exited ${exp.status}: ${exp.stderr}`);
    const server = await startServer({ HLOSERVE_MODEL_REPO: repo, HLOSERVE_MODELS_INCLUDE: 'scale' });
    try {
      const n = 4096 * 4096;
      const data = new Float32Array(n);
      for (let i = 0; i < n; i++) data[i] = (i % 1000) / 1000;
      const x = { x: tensor(data, [1, 4096, 4096]) };
      console.log(`\n## one 64 MiB FP32 tensor in, 64 MiB out (scale: y = 2x), ${bigIters} calls after 2 warm-up\n`);
      console.log('| path | p50 ms | min ms | max ms | GiB/s (in+out, p50) |');
      console.log('|---|---|---|---|---|');
      const cases = [
        ['gRPC inline', server.grpcUrl(), 'grpc', false],
        ['gRPC + shared memory', server.grpcUrl(), 'grpc', true],
        ['HTTP binary inline', server.httpUrl(), 'http', false],
        ['HTTP + shared memory', server.httpUrl(), 'http', true],
      ];
      for (const [label, url, protocol, sharedMemory] of cases) {
        const c = new InferenceClient({ url, protocol, timeoutMs: 60_000 });
        const m = c.model('scale');
        const ms = [];
        for (let i = 0; i < bigIters + 2; i++) {
          const t = performance.now();
          const res = await m.infer(x, { sharedMemory });
          const took = performance.now() - t;
          const y = res.output('y').data;
          if (y.length !== n || y[12345] !== 2 * data[12345]) throw new Error(`${label}: wrong output`);
          if (i >= 2) ms.push(took * 1000);
        }
        await c.close();
        const s = summarize(ms);
        const gibps = (2 * 64) / 1024 / (s.p50 / 1e6);
        console.log(
          `| ${label} | ${fmt(s.p50 / 1000, 1)} | ${fmt(s.min / 1000, 1)} | ${fmt(s.max / 1000, 1)} | ${fmt(gibps, 2)} |`,
        );
      }
    } finally {
      await server.stop();
    }
  } finally {
    rmSync(repo, { recursive: true, force: true });
  }
}
