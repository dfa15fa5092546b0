// bench/runtime: the addon's per-call execute overhead on a tiny program, host<->device bandwidth
// from 1 MB to 256 MB, and the same tiny program through jax on the CPU for comparison.
// Usage: npm run bench:runtime [-- --plugin cpu|cuda|<path>] [--iters 5000] [--no-jax]
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { hostArray, Runtime } from '../native/dist/lib/index.js';
import { arg, fmt, machine, summarize } from './stats.mjs';

const plugin = arg('plugin', 'cpu');
const iters = Number(arg('iters', '5000'));
const here = dirname(fileURLToPath(import.meta.url));

const ADD4 = `module { func.func public @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32> } }`;

// The direct host copy (CPU plugin: outputs read with one memcpy instead of an async transfer) is
// measured off and on, side by side.
process.env.HLOSERVE_DIRECT_HOST_COPY = '0';
const rtOff = await Runtime.create({ plugin });
process.env.HLOSERVE_DIRECT_HOST_COPY = '1';
const rt = await Runtime.create({ plugin });
console.log(
  `# bench/runtime on ${rt.platformName} (${rt.plugin.path.split('/').slice(-2).join('/')}, PJRT ${rt.plugin.apiVersion.join('.')})`,
);
console.log(`# machine: ${machine()}`);

async function timeCalls(fn) {
  for (let i = 0; i < Math.min(500, iters); i++) await fn();
  const us = new Float64Array(iters);
  for (let i = 0; i < iters; i++) {
    const t = process.hrtime.bigint();
    await fn();
    us[i] = Number(process.hrtime.bigint() - t) / 1e3;
  }
  return summarize(us);
}

const rows = [];
let hostCall;
for (const [label, r] of [
  ['direct copy off', rtOff],
  ['direct copy on', rt],
]) {
  const exe = await r.compile(ADD4);
  const x = hostArray('f32', [4], new Float32Array([1, 2, 3, 4]));
  const dx = await r.upload(x);
  const h = await timeCalls(() => exe.run([x, x]));
  rows.push([`execute f32[4] add, host args in, host out (${label})`, h]);
  rows.push([`execute f32[4] add, device args, host out (${label})`, await timeCalls(() => exe.run([dx, dx]))]);
  hostCall = h;
  if (r === rt) {
    rows.push([
      'execute f32[4] add, device args, device out',
      await timeCalls(async () => {
        const [o] = await exe.runToDevice([dx, dx]);
        o.dispose();
      }),
    ]);
  }
}
rtOff.dispose();

let jax = null;
if (!process.argv.includes('--no-jax')) {
  const r = spawnSync(process.env.PYTHON ?? 'python3', [join(here, 'jax_runtime.py'), String(iters)], {
    encoding: 'utf8',
  });
  if (r.status === 0) jax = JSON.parse(r.stdout.trim().split('\n').pop());
  else console.log(`# jax comparison skipped: ${(r.stderr || r.stdout).trim().split('\n').pop()}`);
}

console.log('\n| call | n | p50 µs | p90 µs | p99 µs |');
console.log('|---|---|---|---|---|');
for (const [name, s] of rows) console.log(`| ${name} | ${s.n} | ${fmt(s.p50)} | ${fmt(s.p90)} | ${fmt(s.p99)} |`);
if (jax) {
  console.log(
    `| jax ${jax.version} jit add f32[4], numpy in, block_until_ready + np.asarray | ${jax.n} | ${fmt(jax.p50)} | ${fmt(jax.p90)} | ${fmt(jax.p99)} |`,
  );
  console.log(
    `\nratio addon/jax (host args in, host out): p50 ${fmt(hostCall.p50 / jax.p50, 2)}, p99 ${fmt(hostCall.p99 / jax.p99, 2)}`,
  );
}

console.log('\n| size | upload (host→device) GB/s | download (device→host) GB/s | pinned_host→device GB/s |');
console.log('|---|---|---|---|');
const hasPinned = rt.memoryKinds().includes('pinned_host');
for (const mb of [1, 4, 16, 64, 256]) {
  const bytes = mb * 2 ** 20;
  const data = new Uint8Array(bytes);
  for (let i = 0; i < bytes; i += 4096) data[i] = i & 0xff;
  const a = { dtype: 'u8', shape: [bytes], data };
  const reps = mb >= 64 ? 3 : 10;
  const into = new Uint8Array(bytes);
  let up = Infinity;
  let down = Infinity;
  let pinned = Infinity;
  for (let r = 0; r < reps; r++) {
    let t = performance.now();
    const b = await rt.upload(a);
    up = Math.min(up, performance.now() - t);
    t = performance.now();
    await b.toHost(into);
    down = Math.min(down, performance.now() - t);
    b.dispose();
    if (hasPinned) {
      const p = await rt.upload(a, { memory: 'pinned_host' });
      t = performance.now();
      const d = await p.copyTo('device');
      pinned = Math.min(pinned, performance.now() - t);
      d.dispose();
      p.dispose();
    }
  }
  const gbs = (ms) => fmt(bytes / (ms / 1e3) / 1e9, 2);
  console.log(`| ${mb} MB | ${gbs(up)} | ${gbs(down)} | ${hasPinned ? gbs(pinned) : 'n/a'} |`);
}
rt.dispose();
