// bench/shm: a 64 MiB input through system shared memory against the same input inline in a gRPC
// message, end to end (client call to answer), and the p99 of small requests to another model
// (mlp, batch 1, one caller) alone and while the 64 MiB requests run back to back.
//
// Before/after in one run: pass the roots of two checkouts (each with engine/dist built and its
// own node_modules); rounds alternate between them, each a fresh server process, and the table
// gives each root's median round. The model `big` (the last element of a f32[1, 16777216] input:
// next to no device time, so what is measured is moving the tensor) is written
// into a temporary repository next to a link to examples/models/mlp.
//
// The small requests are measured twice against the big ones: with the big requests back to back
// (the most the client can send) and paced at --big-rate a second (default 20, 1.3 GB/s of
// tensor), where what remains is the big calls' own gRPC work, not a copy.
//
//   npm run build && nice -n 10 node bench/shm.mjs BEFORE_ROOT [AFTER_ROOT] [--rounds N] [--seconds N] [--big-rate N]
//   (AFTER_ROOT defaults to this checkout)
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { InferenceClient, SystemSharedMemoryRegion } from '../client/dist/src/index.js';
import { SERVER_NODE_FLAGS } from '../engine/dist/src/node-flags.js';
import { machine, percentile } from './stats.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const valued = new Set(['--rounds', '--seconds', '--big-rate']);
const flag = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i < 0 ? fallback : process.argv[i + 1];
};
const positional = process.argv.slice(2).filter((a, i, all) => !a.startsWith('--') && !valued.has(all[i - 1]));
if (positional.length < 1) {
  console.error('usage: node bench/shm.mjs BEFORE_ROOT [AFTER_ROOT] [--rounds N] [--seconds N]');
  process.exit(2);
}
const roots = [positional[0], positional[1] ?? join(here, '..')].map((r) => resolve(r));
const rounds = Number(flag('--rounds', '3'));
const seconds = Number(flag('--seconds', '3'));
const bigRate = Number(flag('--big-rate', '20'));
const ELEMENTS = 16 * 2 ** 20; // 64 MiB of f32
const BIG_REQUESTS = 6;

// A throwaway model repository: `big` as text StableHLO, and the example mlp.
const repo = mkdtempSync(join(tmpdir(), 'hlo-bench-shm-'));
mkdirSync(join(repo, 'models', 'big'), { recursive: true });
symlinkSync(join(here, '..', 'examples', 'models', 'mlp'), join(repo, 'models', 'mlp'));
writeFileSync(
  join(repo, 'models', 'big', 'manifest.yaml'),
  `format_version: "2.0"
name: big
description: the last element of a 64 MiB input (bench/shm)
executable_inputs:
  - {name: x, dtype: f32, shape: fn, dims: {f: ${ELEMENTS}}}
executable_outputs:
  - {name: y, dtype: f32, shape: kn, dims: {k: 1}}
batching: {compiled_batch_sizes: [1]}
provenance: {exporter: bench/shm}
`,
);
const x = `tensor<1x${ELEMENTS}xf32>`;
writeFileSync(
  join(repo, 'models', 'big', 'model.b1.mlir'),
  `module @jit_big attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: ${x}) -> (tensor<1x1xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.slice %arg0 [0:1, ${ELEMENTS - 1}:${ELEMENTS}] : (${x}) -> tensor<1x1xf32>
    return %0 : tensor<1x1xf32>
  }
}
`,
);
writeFileSync(
  join(repo, 'node.yaml'),
  `model_repo: models
global:
  runtime: {plugin: cpu}
  endpoints: {host: 127.0.0.1, grpc_port: 0, http_port: 0, metrics_port: 0, console_port: 0}
`,
);

async function startServer(root) {
  const child = spawn(
    process.execPath,
    [...SERVER_NODE_FLAGS, join(root, 'engine', 'dist', 'src', 'cli.js'), 'serve', '--config', join(repo, 'node.yaml')],
    { env: { ...process.env, TF_CPP_MIN_LOG_LEVEL: '2' }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const logs = [];
  const exited = new Promise((r) => child.once('exit', r));
  const grpc = await new Promise((ok, fail) => {
    for (const s of [child.stdout, child.stderr]) {
      createInterface({ input: s }).on('line', (line) => {
        logs.push(line);
        if (line.startsWith('{') && JSON.parse(line).msg === 'listening') ok(JSON.parse(line).grpc);
      });
    }
    void exited.then((code) => fail(new Error(`server ${root} exited ${code}:\n${logs.join('\n')}`)));
  });
  return {
    url: `127.0.0.1:${grpc}`,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

const input = new Float32Array(ELEMENTS).fill(1);
input[ELEMENTS - 1] = ELEMENTS; // what `big` answers: proof that the whole tensor arrived
const small = new Float32Array(784).fill(0.5);

/** mlp at one caller until `until()` says stop (or `secs` pass): latencies in µs. */
async function smallLoop(client, secs) {
  const mlp = client.model('mlp');
  const lat = [];
  const end = performance.now() + secs * 1e3;
  while (performance.now() < end) {
    const t = performance.now();
    await mlp.infer({ x: { datatype: 'FP32', shape: [1, 784], data: small } });
    lat.push((performance.now() - t) * 1e3);
  }
  return lat.sort((a, b) => a - b);
}

async function oneRound(root) {
  const server = await startServer(root);
  const client = new InferenceClient({ url: server.url, timeoutMs: 120_000, retry: false });
  const region = await SystemSharedMemoryRegion.create(`bench-shm-${process.pid}`, ELEMENTS * 4);
  try {
    await region.write(0, new Uint8Array(input.buffer));
    await client.registerSystemSharedMemory(region);
    const big = client.model('big');
    const viaShm = () =>
      big.infer({ x: { datatype: 'FP32', shape: [1, ELEMENTS], sharedMemory: { region, byteSize: ELEMENTS * 4 } } });
    const inline = () => big.infer({ x: { datatype: 'FP32', shape: [1, ELEMENTS], data: input } });
    const check = (r) => {
      const y = r.output('y').data[0];
      if (y !== ELEMENTS) throw new Error(`big answered ${y}, expected ${ELEMENTS}`);
    };
    check(await viaShm());
    check(await inline());
    await smallLoop(client, 0.5);
    const timeEach = async (fn) => {
      const ms = [];
      for (let i = 0; i < BIG_REQUESTS; i++) {
        const t = performance.now();
        check(await fn());
        ms.push(performance.now() - t);
      }
      return percentile(
        ms.sort((a, b) => a - b),
        50,
      );
    };
    const shmMs = await timeEach(viaShm);
    const inlineMs = await timeEach(inline);
    const alone = await smallLoop(client, seconds);
    // The 64 MiB requests back to back while the small ones run.
    const during = async (fn, rate = 0) => {
      let stop = false;
      let bigCount = 0;
      const t0 = performance.now();
      const loop = (async () => {
        while (!stop) {
          check(await fn());
          bigCount++;
          const due = t0 + (bigCount * 1e3) / rate - performance.now();
          if (rate > 0 && due > 0) await new Promise((r) => setTimeout(r, due));
        }
      })();
      const lat = await smallLoop(client, seconds);
      stop = true;
      await loop;
      return { lat, bigCount };
    };
    const withShm = await during(viaShm);
    const paced = await during(viaShm, bigRate);
    return {
      pacedP50: percentile(paced.lat, 50),
      pacedP99: percentile(paced.lat, 99),
      pacedPerSecond: paced.bigCount / seconds,
      shmMs,
      inlineMs,
      aloneP50: percentile(alone, 50),
      aloneP99: percentile(alone, 99),
      shmP50: percentile(withShm.lat, 50),
      shmP99: percentile(withShm.lat, 99),
      bigPerSecond: withShm.bigCount / seconds,
    };
  } finally {
    await client.unregisterSystemSharedMemory(region).catch(() => undefined);
    await region.destroy();
    await client.close();
    await server.stop();
  }
}

console.log(
  `# bench/shm, machine: ${machine()}; ${rounds} round(s) alternating, ${seconds} s per small-request window`,
);
roots.forEach((r, i) => console.log(`# ${i === 0 ? 'before' : 'after'}: ${r}`));
const results = roots.map(() => []);
try {
  for (let k = 0; k < rounds; k++) {
    for (let i = 0; i < roots.length; i++) results[i].push(await oneRound(roots[i]));
  }
} finally {
  rmSync(repo, { recursive: true, force: true });
}
const median = (rs, key) => {
  const v = rs.map((r) => r[key]).sort((a, b) => a - b);
  return v[Math.floor((v.length - 1) / 2)];
};
const f = (v, d = 0) => v.toFixed(d);
console.log(
  '| server | 64 MiB inline gRPC ms | 64 MiB shm ms | inline / shm | mlp p50 µs alone | mlp p99 µs alone | mlp p50 µs during shm | mlp p99 µs during shm | 64 MiB shm req/s meanwhile | mlp p50 µs, shm paced | mlp p99 µs, shm paced | paced req/s | rounds (inline/shm ratio) | rounds (p99 paced / alone) |',
);
console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|');
results.forEach((rs, i) => {
  const m = (k) => median(rs, k);
  console.log(
    `| ${i === 0 ? 'before' : 'after'} | ${f(m('inlineMs'), 1)} | ${f(m('shmMs'), 1)} | ${f(m('inlineMs') / m('shmMs'), 2)} | ${f(m('aloneP50'))} | ${f(m('aloneP99'))} | ${f(m('shmP50'))} | ${f(m('shmP99'))} | ${f(m('bigPerSecond'), 1)} | ${f(m('pacedP50'))} | ${f(m('pacedP99'))} | ${f(m('pacedPerSecond'), 1)} | ${rs.map((r) => f(r.inlineMs / r.shmMs, 2)).join(' ')} | ${rs.map((r) => f(r.pacedP99 / r.aloneP99, 2)).join(' ')} |`,
  );
});
