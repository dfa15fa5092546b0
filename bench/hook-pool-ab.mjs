// bench/hook-pool-ab: the hook pool alone, two engine builds side by side in one process.
//
// Each build's HookPool (2 threads) runs a pass-through preprocess of one f32 [1,784] tensor, in
// 30 rounds alternating between the builds: 100 calls at c=1 with an event-loop turn between
// calls, then 800 calls at c=16. Interleaving in one process cancels most of the drift of a
// loaded machine. Prints per build: c=1 p50/p90, c=16 calls/s (median round), process CPU/call.
//
//   cp -r engine/dist engine/dist-before   # at the older commit, then build the newer one
//   node bench/hook-pool-ab.mjs dist dist-before [--gap-us N]
//
// --gap-us N: between c=1 calls the main thread sleeps N µs (Atomics.wait) instead of one
// event-loop turn, as the engine's thread does while a request executes, so both threads' vCPUs
// may halt between calls as they do at c=1 on a quiet machine. Pools are built with
// engineIdle: () => true, which a build with the engine's synchronous wait for a lane answer
// (branch s9-hooks, d070cd0; not kept, bench/RESULTS.md session 9) reads and others ignore.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setImmediate } from 'node:timers';
import { fileURLToPath, pathToFileURL } from 'node:url';

const engine = join(dirname(fileURLToPath(import.meta.url)), '..', 'engine');
const argv = process.argv.slice(2);
const gapAt = argv.indexOf('--gap-us');
const gapUs = gapAt < 0 ? 0 : Number(argv[gapAt + 1]);
const builds = argv.filter((a, i) => a !== '--gap-us' && (gapAt < 0 || i !== gapAt + 1));
const gapWord = new Int32Array(new SharedArrayBuffer(4));
if (builds.length === 0) throw new Error('usage: node bench/hook-pool-ab.mjs <build under engine/> ...');
const dir = mkdtempSync(join(tmpdir(), 'hloserve-hook-pool-ab-'));
writeFileSync(join(dir, 'pass.mjs'), 'export function preprocess(t) { return t; }\n');
const url = pathToFileURL(join(dir, 'pass.mjs')).href;
const pools = {};
for (const b of builds) {
  const { HookPool } = await import(pathToFileURL(join(engine, b, 'src', 'hooks', 'hook-pool.js')).href);
  pools[b] = new HookPool({ threads: 2, maxQueued: 100, maxHeapMb: 64, name: b, engineIdle: () => true });
}
const context = { model: 'm', requestId: 'r', parameters: {}, deadline: null };
const mk = () => ({ x: { dtype: 'f32', shape: [1, 784], data: new Float32Array(784) } });
const run = (p) => p.run({ url, fn: 'preprocess', tensors: mk(), context, timeoutMs: 1000 });
const lat = Object.fromEntries(builds.map((b) => [b, []]));
const cpu = Object.fromEntries(builds.map((b) => [b, []]));
const rate = Object.fromEntries(builds.map((b) => [b, []]));
for (const b of builds) for (let i = 0; i < 500; i++) await run(pools[b]);
for (let r = 0; r < 30; r++) {
  for (const b of r % 2 ? builds : [...builds].reverse()) {
    // c=1 with an event-loop turn between calls
    for (let i = 0; i < 100; i++) {
      const t = performance.now();
      await run(pools[b]);
      lat[b].push(performance.now() - t);
      await new Promise((res) => setImmediate(res));
      if (gapUs > 0) Atomics.wait(gapWord, 0, 0, gapUs / 1000);
    }
    // c=16 back to back
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    let left = 800;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (left-- > 0) await run(pools[b]);
      }),
    );
    const c = process.cpuUsage(c0);
    const wall = performance.now() - t0;
    cpu[b].push((c.user + c.system) / 800);
    rate[b].push((800 / wall) * 1000);
  }
}
const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const q = (xs, p) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * p)];
for (const b of builds)
  console.log(
    `${b}: c=1 p50 ${(q(lat[b], 0.5) * 1000).toFixed(1)}us p90 ${(q(lat[b], 0.9) * 1000).toFixed(1)}us | c=16 median ${med(rate[b]).toFixed(0)} calls/s, cpu ${med(cpu[b]).toFixed(1)} us/call`,
  );
for (const p of Object.values(pools)) await p.close();
rmSync(dir, { recursive: true, force: true });
