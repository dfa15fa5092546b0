// bench/weight-staging: the cost of a cold load (host copy -> device) with weights staged in
// pageable memory versus the runtime's pinned_host memory space, side by side; for pinned_host,
// the cache's batched copy (one native call per model) against one copyTo per tensor; and, on the
// CPU plugin, loads into a device arena: placed anew each time, and refilled into the views of the
// model loaded before (what the cache does for a model of the same tensors).
// Usage: npm run build && node bench/weight-staging.mjs
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Runtime } from '../native/dist/lib/index.js';
import { encodeSafetensors } from '../engine/dist/src/bundle/safetensors-writer.js';
import { PjrtWeightBackend } from '../engine/dist/src/weights/pjrt-weight-backend.js';
import { loadBundle } from '../engine/dist/src/bundle/bundle.js';
import { examplesDir } from '../e2e/dist/src/server-process.js';
import { fmt, machine, summarize } from './stats.mjs';

const rt = await Runtime.create();
console.log(`# bench/weight-staging on ${rt.platformName}; memory spaces: ${rt.memoryKinds(0).join(', ')}`);
console.log(`# machine: ${machine()}`);

const resnet = await loadBundle(join(examplesDir, 'resnet'));
const dir = mkdtempSync(join(tmpdir(), 'hlo-staging-'));
const big = join(dir, 'weights.safetensors');
const tensors = Array.from({ length: 16 }, (_, i) => ({
  name: `w${i}`,
  dtype: 'f32',
  shape: [1024, 1024],
  data: new Uint8Array(4 * 2 ** 20).fill(i),
}));
writeFileSync(big, encodeSafetensors(tensors, { argumentOrder: tensors.map((t) => t.name) }));
// One model of bench/scheduling's (d) catalog: the shapes of e2e/src/catalog.ts.
const small = join(dir, 'catalog.safetensors');
const catalog = [[256, 512], [512], [512, 8], [8]].map((shape, i) => ({
  name: `c${i}`,
  dtype: 'f32',
  shape,
  data: new Float32Array(shape.reduce((a, b) => a * b)).fill(i),
}));
writeFileSync(small, encodeSafetensors(catalog, { argumentOrder: catalog.map((t) => t.name) }));
const sources = [
  [
    'catalog model (4 tensors)',
    { path: small, argumentOrder: catalog.map((t) => t.name) },
    catalog.reduce((n, t) => n + t.data.byteLength, 0),
  ],
  [
    'resnet weights',
    { path: resnet.weights.path, argumentOrder: resnet.weights.argumentOrder },
    resnet.weights.byteLength,
  ],
  ['synthetic 64 MiB (16 x 4 MiB)', { path: big, argumentOrder: tensors.map((t) => t.name) }, 64 * 2 ** 20],
];

console.log('\n| weights | bytes | staging | cold load p50 ms | min ms | GB/s at p50 |');
console.log('|---|---|---|---|---|---|');
for (const [label, src, bytes] of sources) {
  const variants = ['pageable', 'pinned_host, one copy per tensor', 'pinned_host'];
  if (rt.hostAddressableDevice) variants.push('device arena, placed', 'device arena, refilled');
  for (const variant of variants) {
    const staging = variant.startsWith('pinned_host') ? 'pinned_host' : 'pageable';
    const perTensor = variant.includes('per tensor');
    const arena = variant.startsWith('device arena')
      ? rt.createArena({ limitBytes: 2 * bytes + (1 << 20) })
      : undefined;
    const be = new PjrtWeightBackend(rt, { staging, arena });
    const host = await be.readHost('m', src);
    const ms = [];
    for (let i = 0; i < (bytes < 1e6 ? 200 : 15); i++) {
      const t = performance.now();
      const dev = perTensor
        ? await Promise.all(host.buffers.map((b) => b.copyTo('device')))
        : await be.upload('m', host);
      ms.push(performance.now() - t);
      be.free('m', dev);
      // Without the views kept for reuse, every load places anew.
      if (variant === 'device arena, placed') be.dispose();
    }
    be.releaseHost('m', host);
    be.dispose();
    arena?.dispose();
    const s = summarize(ms);
    console.log(
      `| ${label} | ${bytes} | ${variant} | ${fmt(s.p50, 3)} | ${fmt(s.min, 3)} | ${fmt(bytes / (s.p50 / 1e3) / 1e9, 2)} |`,
    );
  }
}
rt.dispose();
