// bench/lifecycle: what a hot reload costs the models that are not being reloaded (issue 12).
//  (a) latency of model A (examples/models/mlp, batch 1, closed loop) alone, then while model B (a
//      copy of the same bundle: 5 compiled batch sizes) is reloaded back to back: p50/p90/p99.
//  (b) 50 reloads of B: process RSS after the first against after the last, and the addon's
//      ledger (live executables and buffers), which must come back to the same counts.
//
// In-process on the real Worker (explicit mode, reloads through Worker.loadModel, the path the
// KServe RepositoryModelLoad RPC and the dynamic-mode watcher take), CPU plugin.
//
// Usage: npm run build && node --expose-gc bench/lifecycle.mjs [--seconds 10] [--concurrency 2] [--reloads 50]
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig, workerSettings } from '../engine/dist/src/config/node-config.js';
import { createLogger } from '../engine/dist/src/log.js';
import { Worker } from '../engine/dist/src/worker/worker.js';
import { examplesDir } from '../e2e/dist/src/server-process.js';
import { benchEndpoints, ensureServerNodeFlags, fmt, machine, summarize } from './stats.mjs';

ensureServerNodeFlags(import.meta.url);

const arg = (name, dflt) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : dflt);
const seconds = Number(arg('--seconds', '10'));
const concurrency = Number(arg('--concurrency', '2'));
const reloads = Number(arg('--reloads', '50'));

const repo = mkdtempSync(join(tmpdir(), 'hlo-bench-lifecycle-'));
cpSync(join(examplesDir, 'mlp'), join(repo, 'a'), { recursive: true });
cpSync(join(examplesDir, 'mlp'), join(repo, 'b'), { recursive: true });
const base = workerSettings(defaultConfig(repo));
const worker = await Worker.start({
  modelRepo: repo,
  settings: {
    ...base,
    modelControlMode: 'explicit',
    modelsInclude: ['a', 'b'],
    endpoints: benchEndpoints(base.endpoints),
  },
  log: createLogger('warn'),
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

async function measureA(during) {
  const samples = [];
  let failures = 0;
  let stop = false;
  const loop = async () => {
    while (!stop) {
      const t = performance.now();
      try {
        await worker.infer(request, ctx);
        samples.push((performance.now() - t) * 1000);
      } catch {
        failures++;
      }
    }
  };
  const callers = Array.from({ length: concurrency }, loop);
  let background = 0;
  const side = (async () => {
    if (!during) return;
    while (!stop) {
      await worker.loadModel('b');
      background++;
    }
  })();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  stop = true;
  await Promise.all([...callers, side]);
  return { ...summarize(samples), failures, background };
}

const rss = () => process.memoryUsage().rss;
const settle = async () => {
  for (let i = 0; i < 3; i++) {
    globalThis.gc?.();
    await new Promise((r) => setTimeout(r, 50));
  }
};

console.log(`# bench/lifecycle - ${machine()}`);
console.log(`# A = mlp (batch 1, ${concurrency} closed-loop callers), B = mlp copy; ${seconds} s per phase`);
await measureA(false); // warm
const alone = await measureA(false);
const during = await measureA(true);
const row = (label, s) =>
  `${label.padEnd(22)} n=${String(s.n).padStart(7)}  p50 ${fmt(s.p50)} us  p90 ${fmt(s.p90)} us  p99 ${fmt(s.p99)} us  failures ${s.failures}`;
console.log(row('(a) A alone', alone));
console.log(row('(a) A while B reloads', during) + `  (B reloaded ${during.background} times)`);
console.log(`(a) p99 ratio during/alone: ${fmt(during.p99 / alone.p99, 2)}`);

await worker.loadModel('b');
await settle();
const first = rss();
const ledger0 = worker.runtime.ledger();
const t0 = performance.now();
for (let i = 0; i < reloads; i++) await worker.loadModel('b');
const perReload = (performance.now() - t0) / reloads;
await settle();
const last = rss();
const ledger1 = worker.runtime.ledger();
console.log(
  `(b) ${reloads} reloads (${fmt(perReload, 0)} ms each): RSS after the first ${fmt(first / 2 ** 20)} MiB, after the last ${fmt(last / 2 ** 20)} MiB (${fmt((last / first - 1) * 100, 1)} %)`,
);
console.log(`(b) addon ledger after the first: ${JSON.stringify(ledger0)}`);
console.log(`(b) addon ledger after the last:  ${JSON.stringify(ledger1)}`);
await worker.stop(false);
rmSync(repo, { recursive: true, force: true });
