// bench/serving: perf_analyzer (Triton's load generator) against hloserve over gRPC at
// concurrency 1 and 16 on the MLP and the ResNet-style CNN, and the server's overhead: the
// served p50 at concurrency 1 minus the addon executing the same batch-1 program directly.
// Usage: npm run build && node bench/serving.mjs [--window-ms 3000]
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { hostArray, Runtime } from '../native/dist/lib/index.js';
import { readSafetensors } from '../engine/dist/src/bundle/safetensors.js';
import { loadBundle } from '../engine/dist/src/bundle/bundle.js';
import { grpcLoadArgs, runPerfAnalyzer } from '../e2e/dist/src/perf-analyzer.js';
import { examplesDir, startServer } from '../e2e/dist/src/server-process.js';
import { arg, fmt, machine, summarize } from './stats.mjs';

const windowMs = arg('window-ms', '3000');
const models = ['mlp', 'resnet'];

console.log(`# bench/serving, machine: ${machine()}`);

// 1. The addon alone: batch-1 executable, weights on the device, host input in, host output out.
const direct = new Map();
{
  const rt = await Runtime.create();
  for (const m of models) {
    const bundle = await loadBundle(join(examplesDir, m));
    const exe = await rt.compile(await readFile(join(examplesDir, m, 'model.b1.mlir')), {});
    const file = await readSafetensors(bundle.weights.path);
    const weights = [];
    for (const name of bundle.weights.argumentOrder) {
      const t = file.tensor(name);
      weights.push(await rt.upload({ dtype: t.dtype, shape: t.shape, data: t.data }));
    }
    const spec = bundle.manifest.executableInputs[0];
    const shape = spec.wireShape(1);
    const x = hostArray('f32', shape, new Float32Array(shape.reduce((a, b) => a * b, 1)).fill(0.5));
    for (let i = 0; i < 300; i++) await exe.run([x, ...weights]);
    const us = [];
    for (let i = 0; i < 3000; i++) {
      const t = process.hrtime.bigint();
      await exe.run([x, ...weights]);
      us.push(Number(process.hrtime.bigint() - t) / 1e3);
    }
    direct.set(m, summarize(us));
  }
  rt.dispose();
}

// 2. The server, driven by perf_analyzer.
const server = await startServer({ HLOSERVE_MODELS_INCLUDE: models.join(',') });
const rows = [];
try {
  for (const m of models) {
    for (const c of [1, 16]) {
      const r = await runPerfAnalyzer([...grpcLoadArgs(m, server.grpcUrl(), c), '-p', windowMs, '-s', '20', '-r', '6']);
      if (r.status !== 0) throw new Error(`perf_analyzer failed:\n${r.output}`);
      const row = r.rows.get(c);
      const serverAvg =
        /Avg request latency: (\d+) usec \(overhead (\d+) usec \+ queue (\d+) usec \+ compute input (\d+) usec \+ compute infer (\d+) usec \+ compute output (\d+) usec\)/.exec(
          r.output,
        );
      const exec = /Inference count: (\d+)\s+Execution count: (\d+)/.exec(r.output);
      rows.push({
        m,
        c,
        ...row,
        serverAvg: serverAvg?.slice(1).map(Number),
        batching: exec ? Number(exec[1]) / Number(exec[2]) : NaN,
      });
    }
  }
} finally {
  await server.stop();
}

console.log(
  '\n| model | concurrency | throughput infer/s | p50 µs | p99 µs | avg rows per execution | server avg µs (queue + infer) |',
);
console.log('|---|---|---|---|---|---|---|');
for (const r of rows) {
  const s = r.serverAvg;
  console.log(
    `| ${r.m} | ${r.c} | ${fmt(r.throughput)} | ${r.p50} | ${r.p99} | ${fmt(r.batching, 2)} | ${s ? `${s[0]} (${s[2]} + ${s[4]})` : '?'} |`,
  );
}
console.log('\n| model | addon direct execute p50 µs (batch 1) | served p50 µs at c=1 | server overhead p50 µs |');
console.log('|---|---|---|---|');
for (const m of models) {
  const d = direct.get(m);
  const served = rows.find((r) => r.m === m && r.c === 1);
  console.log(`| ${m} | ${fmt(d.p50)} | ${served.p50} | ${fmt(served.p50 - d.p50)} |`);
}
