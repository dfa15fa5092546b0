// bench/scheduling: the scheduler and the weight cache, measured in-process on the real Worker
// (codec, scheduler, weight cache, PJRT addon; no network in the way), side by side in one run:
//  (a) coalescing: throughput at concurrency 1, 8, 32 (mlp, compiled sizes 1,4,8,16,32) against
//      the addon executing batch 32 directly;
//  (b) cold call: a call to an evicted model minus a warm call, against weight bytes / measured
//      host-to-device bandwidth;
//  (c) fairness: two equal models offered 10:1 load at saturation, equal weights: device-time
//      shares, and the light model's p99 against its p99 alone;
//  (d) Zipf(1.0) traffic over a catalog ten times the weight budget against the same catalog
//      all resident.
// Usage: npm run build && node bench/scheduling.mjs [--quick]
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hostArray, Runtime } from '../native/dist/lib/index.js';
import { loadBundle } from '../engine/dist/src/bundle/bundle.js';
import { readSafetensors } from '../engine/dist/src/bundle/safetensors.js';
import { defaultConfig, workerSettings } from '../engine/dist/src/config/node-config.js';
import { createLogger } from '../engine/dist/src/log.js';
import { Worker } from '../engine/dist/src/worker/worker.js';
import { writeCatalog } from '../e2e/dist/src/catalog.js';
import { examplesDir } from '../e2e/dist/src/server-process.js';
import { fmt, machine, summarize } from './stats.mjs';

const quick = process.argv.includes('--quick');
const discipline = process.argv.includes('--discipline')
  ? process.argv[process.argv.indexOf('--discipline') + 1]
  : 'fair';
const only = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] : 'abcd';
const SECONDS = quick ? 1.5 : 4;
const log = createLogger('silent');
console.log(`# bench/scheduling${quick ? ' --quick' : ''}, discipline ${discipline}, machine: ${machine()}`);

async function startWorker(repo, { budget = null, include = [], delayUs = 0 } = {}) {
  const base = workerSettings(defaultConfig(repo));
  const settings = {
    ...base,
    modelsInclude: include,
    runtime: { ...base.runtime, weightCacheBytes: budget },
    scheduler: { ...base.scheduler, maxQueueDelayUs: delayUs, discipline },
    // The benches keep more requests outstanding than the default admission cap (64).
    endpoints: { ...base.endpoints, maxConcurrentRequests: 0 },
  };
  return Worker.start({ modelRepo: repo, settings, log });
}

function request(model, input, rows, features) {
  const x = new Float32Array(rows * features).fill(0.5);
  return {
    modelName: model,
    modelVersion: '',
    id: '',
    parameters: {},
    inputs: [
      {
        name: input,
        datatype: 'FP32',
        shape: [rows, features],
        parameters: {},
        data: { kind: 'raw', bytes: new Uint8Array(x.buffer) },
      },
    ],
    outputs: [],
  };
}

const ctx = () => ({ deadline: null, signal: new AbortController().signal });

/** Closed-loop clients: `concurrency` loops each sending `make()` until `seconds` pass. */
async function closedLoop(worker, make, concurrency, seconds) {
  const end = performance.now() + seconds * 1e3;
  const lat = [];
  let rows = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const req = make();
        const t = performance.now();
        await worker.infer(req, ctx());
        lat.push((performance.now() - t) * 1e3);
        rows += req.inputs[0].shape[0];
      }
    }),
  );
  return { rowsPerSecond: rows / seconds, latency: summarize(lat) };
}

const repo = mkdtempSync(join(tmpdir(), 'hlo-bench-catalog-'));

// ---- (a) coalescing ----------------------------------------------------------------------------
if (only.includes('a')) {
  const a = [];
  let direct32;
  {
    const rt = await Runtime.create();
    const bundle = await loadBundle(join(examplesDir, 'mlp'));
    const exe = await rt.compile(readFileSync(join(examplesDir, 'mlp', 'model.b32.mlir')), {});
    const file = await readSafetensors(bundle.weights.path);
    const weights = [];
    for (const n of bundle.weights.argumentOrder) {
      const t = file.tensor(n);
      weights.push(await rt.upload({ dtype: t.dtype, shape: t.shape, data: t.data }));
    }
    const x = hostArray('f32', [32, 784], new Float32Array(32 * 784).fill(0.5));
    for (let i = 0; i < 50; i++) await exe.run([x, ...weights]);
    let n = 0;
    const end = performance.now() + SECONDS * 1e3;
    const t0 = performance.now();
    while (performance.now() < end) {
      await exe.run([x, ...weights]);
      n++;
    }
    direct32 = (n * 32) / ((performance.now() - t0) / 1e3);
    rt.dispose();
  }
  {
    const w = await startWorker(examplesDir, { include: ['mlp'] });
    for (const c of [1, 8, 32]) {
      const r = await closedLoop(w, () => request('mlp', 'x', 1, 784), c, SECONDS);
      const st = w.scheduler.stats('mlp');
      a.push({ c, ...r, hist: st.batchSizeHistogram });
    }
    await w.stop(false);
    // The same at concurrency 32 with a 1 ms batching window (max_queue_delay_us), which lets a
    // batch fill instead of dispatching the first arrival alone.
    const wd = await startWorker(examplesDir, { include: ['mlp'], delayUs: 1000 });
    const r = await closedLoop(wd, () => request('mlp', 'x', 1, 784), 32, SECONDS);
    a.push({ c: '32, window 1 ms', ...r, hist: wd.scheduler.stats('mlp').batchSizeHistogram });
    await wd.stop(false);
  }
  console.log('\n## (a) coalescing: mlp, batch-1 requests, compiled sizes 1,4,8,16,32');
  console.log('| concurrency | rows/s | p50 µs | p99 µs | vs addon batch 32 direct |');
  console.log('|---|---|---|---|---|');
  for (const r of a)
    console.log(
      `| ${r.c} | ${fmt(r.rowsPerSecond, 0)} | ${fmt(r.latency.p50, 0)} | ${fmt(r.latency.p99, 0)} | ${fmt(r.rowsPerSecond / direct32, 2)} |`,
    );
  console.log(`| addon executing batch 32 directly | ${fmt(direct32, 0)} | | | 1.00 |`);
  for (const r of a)
    console.log(`batch sizes dispatched, concurrency ${r.c} (cumulative per worker): ${JSON.stringify(r.hist)}`);
  const aRatio = Math.max(...a.filter((r) => String(r.c).startsWith('32')).map((r) => r.rowsPerSecond)) / direct32;
  console.log(
    `verdict (a): ${fmt(aRatio, 2)} of direct at concurrency 32 (target >= 0.8): ${aRatio >= 0.8 ? 'met' : 'MISSED'}`,
  );
}

// ---- (b) cold call -----------------------------------------------------------------------------
if (only.includes('b')) {
  let b;
  {
    const resnet = await loadBundle(join(examplesDir, 'resnet'));
    const bytes = resnet.weights.byteLength;
    // Budget for resnet alone: any call to mlp evicts it.
    const w = await startWorker(examplesDir, { budget: bytes, include: ['mlp', 'resnet'] });
    const r = () => w.infer(request('resnet', 'image', 1, 32 * 32 * 3), ctx());
    r.toString = () => 'resnet';
    const reqR = () => {
      const x = new Float32Array(32 * 32 * 3).fill(0.5);
      return {
        ...request('resnet', 'image', 1, 0),
        inputs: [
          {
            name: 'image',
            datatype: 'FP32',
            shape: [1, 32, 32, 3],
            parameters: {},
            data: { kind: 'raw', bytes: new Uint8Array(x.buffer) },
          },
        ],
      };
    };
    const warm = [];
    const cold = [];
    for (let i = 0; i < (quick ? 8 : 20); i++) {
      await w.infer(reqR(), ctx()); // make resident
      let t = performance.now();
      await w.infer(reqR(), ctx());
      warm.push(performance.now() - t);
      await w.infer(request('mlp', 'x', 1, 784), ctx()); // evicts resnet
      t = performance.now();
      await w.infer(reqR(), ctx());
      cold.push(performance.now() - t);
    }
    const stats = w.cache.stats();
    await w.stop(false);
    // Host-to-device bandwidth for the same bytes, the way the cache moves them (pinned_host -> device).
    const rt = await Runtime.create();
    const data = new Uint8Array(bytes).fill(1);
    const staged = await rt.upload({ dtype: 'u8', shape: [bytes], data }, { memory: 'pinned_host' });
    const ms = [];
    for (let i = 0; i < 20; i++) {
      const t = performance.now();
      const d = await staged.copyTo('device');
      ms.push(performance.now() - t);
      d.dispose();
    }
    const copy = summarize(ms);
    rt.dispose();
    const ws = summarize(warm);
    const cs = summarize(cold);
    const rs = stats.models.find((m) => m.model === 'resnet');
    b = {
      bytes,
      warm: ws,
      cold: cs,
      copyMs: copy.p50,
      gbs: bytes / (copy.p50 / 1e3) / 1e9,
      loads: stats.loads,
      loadMs: (rs.loadSeconds / rs.loads) * 1e3,
    };
  }
  console.log('\n## (b) cold call: resnet (weights evicted by a call to mlp) vs warm');
  console.log('| weight bytes | warm p50 ms | cold p50 ms | cold - warm ms | bytes / bandwidth ms | ratio |');
  console.log('|---|---|---|---|---|---|');
  const extra = b.cold.p50 - b.warm.p50;
  console.log(
    `| ${b.bytes} | ${fmt(b.warm.p50, 3)} | ${fmt(b.cold.p50, 3)} | ${fmt(extra, 3)} | ${fmt(b.copyMs, 3)} (${fmt(b.gbs, 2)} GB/s) | ${fmt(extra / b.copyMs, 2)} |`,
  );
  console.log(`mean weight-cache load of resnet inside the cold calls (upload only): ${fmt(b.loadMs, 3)} ms`);
  console.log(
    `verdict (b): cold-call penalty ${fmt(extra / b.copyMs, 2)}x the copy time (target <= 1.3): ${extra / b.copyMs <= 1.3 ? 'met' : 'MISSED'}`,
  );
}

// ---- (c) fairness ------------------------------------------------------------------------------
if (only.includes('c')) {
  let c;
  {
    writeCatalog(repo, 2); // m00, m01: identical cost
    const make = (m) => () => request(m, 'x', 1, 256);
    // Alone and under contention on separate workers: the fair discipline remembers recent compute
    // (30 s halflife), so a model that just had the device alone would be held back afterwards.
    const wa = await startWorker(repo, { include: ['m01'] });
    const alone = await closedLoop(wa, make('m01'), 16, SECONDS);
    await wa.stop(false);
    const w = await startWorker(repo, { include: ['m00', 'm01'] });
    // Both saturate: each keeps more requests outstanding than its largest compiled batch (8).
    const [heavy, light] = await Promise.all([
      closedLoop(w, make('m00'), 160, SECONDS),
      closedLoop(w, make('m01'), 16, SECONDS),
    ]);
    const dh = w.scheduler.stats('m00').computeSecondsTotal;
    const dl = w.scheduler.stats('m01').computeSecondsTotal;
    await w.stop(false);
    c = { alone, heavy, light, shareHeavy: dh / (dh + dl), shareLight: dl / (dh + dl) };
  }
  console.log(
    '\n## (c) fairness: two equal models, offered load 10:1 (160 vs 16 outstanding), equal weights, fair discipline',
  );
  console.log('| model | offered | device-time share | rows/s | p50 µs | p99 µs |');
  console.log('|---|---|---|---|---|---|');
  console.log(
    `| heavy | 160 outstanding | ${fmt(c.shareHeavy * 100, 1)} % | ${fmt(c.heavy.rowsPerSecond, 0)} | ${fmt(c.heavy.latency.p50, 0)} | ${fmt(c.heavy.latency.p99, 0)} |`,
  );
  console.log(
    `| light | 16 outstanding | ${fmt(c.shareLight * 100, 1)} % | ${fmt(c.light.rowsPerSecond, 0)} | ${fmt(c.light.latency.p50, 0)} | ${fmt(c.light.latency.p99, 0)} |`,
  );
  console.log(
    `| light, alone | 16 outstanding | | ${fmt(c.alone.rowsPerSecond, 0)} | ${fmt(c.alone.latency.p50, 0)} | ${fmt(c.alone.latency.p99, 0)} |`,
  );
  const dev = Math.abs(c.shareLight - 0.5) / 0.5;
  console.log(
    `verdict (c): shares ${fmt(c.shareHeavy * 100, 1)}/${fmt(c.shareLight * 100, 1)} (${fmt(dev * 100, 1)} % from equal; target within 10 %): ${dev <= 0.1 ? 'met' : 'MISSED'}; light p99 under load / alone: ${fmt(c.light.latency.p99 / c.alone.latency.p99, 2)}x`,
  );
}

// ---- (d) Zipf over a catalog ten times the budget ----------------------------------------------
if (only.includes('d')) {
  let d;
  {
    rmSync(repo, { recursive: true, force: true });
    const N = 20;
    const models = writeCatalog(repo, N);
    const total = models.reduce((s, m) => s + m.weightBytes, 0);
    const weights = models.map((_, i) => 1 / (i + 1));
    const norm = weights.reduce((s, x) => s + x, 0);
    const cdf = [];
    weights.reduce((acc, x, i) => (cdf[i] = acc + x / norm), 0);
    let seed = 42;
    const pick = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      const u = seed / 2147483648;
      return models[cdf.findIndex((p) => u <= p)] ?? models[N - 1];
    };
    const run = async (budget) => {
      seed = 42;
      const w = await startWorker(repo, { budget });
      const before = w.cache.stats().loads;
      const r = await closedLoop(w, () => request(pick().name, 'x', 1, 256), 8, SECONDS);
      const loads = w.cache.stats().loads - before;
      await w.stop(false);
      return { ...r, loads };
    };
    const resident = await run(null);
    const tenth = await run(Math.floor(total / 10));
    d = { total, resident, tenth };
  }
  rmSync(repo, { recursive: true, force: true });
  console.log('\n## (d) Zipf(1.0) over 20 models, concurrency 8: budget = 1/10 of the catalog vs all resident');
  console.log('| budget | rows/s | p50 µs | p99 µs | weight loads during the run |');
  console.log('|---|---|---|---|---|');
  console.log(
    `| unlimited (all resident) | ${fmt(d.resident.rowsPerSecond, 0)} | ${fmt(d.resident.latency.p50, 0)} | ${fmt(d.resident.latency.p99, 0)} | ${d.resident.loads} |`,
  );
  console.log(
    `| ${Math.floor(d.total / 10)} bytes (1/10) | ${fmt(d.tenth.rowsPerSecond, 0)} | ${fmt(d.tenth.latency.p50, 0)} | ${fmt(d.tenth.latency.p99, 0)} | ${d.tenth.loads} |`,
  );
  const dRatio = d.tenth.rowsPerSecond / d.resident.rowsPerSecond;
  console.log(
    `verdict (d): ${fmt(dRatio, 2)} of all-resident throughput (target >= 0.7): ${dRatio >= 0.7 ? 'met' : 'MISSED'}`,
  );
}
rmSync(repo, { recursive: true, force: true });
