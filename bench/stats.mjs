// Small helpers shared by the benchmark scripts (they print numbers; nothing here asserts).
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import { clearInterval, setInterval } from 'node:timers';
import { fileURLToPath } from 'node:url';
import { missingServerNodeFlags } from '../engine/dist/src/node-flags.js';

export function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

export function summarize(samplesUs) {
  const s = Float64Array.from(samplesUs).sort();
  return {
    n: s.length,
    p50: percentile(s, 50),
    p90: percentile(s, 90),
    p99: percentile(s, 99),
    min: s[0],
    max: s[s.length - 1],
  };
}

export function machine() {
  const cpus = os.cpus();
  return `${cpus[0]?.model ?? 'cpu'} x${cpus.length}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, ${os.platform()} ${os.release()}, node ${process.version}`;
}

/** The value after `--name` on the command line, or `dflt` when the flag is absent. */
export const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : dflt;
};

export const fmt = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : String(x));

/**
 * A worker's endpoints for an in-process bench: loopback, ephemeral gRPC/HTTP ports, no metrics
 * or console listener, and no admission cap (the benches keep more requests outstanding than the
 * default 64).
 */
export const benchEndpoints = (endpoints) => ({
  ...endpoints,
  host: '127.0.0.1',
  grpcPort: 0,
  httpPort: 0,
  metricsPort: -1,
  consolePort: -1,
  maxConcurrentRequests: 0,
});

/**
 * An in-process bench measures the server, so it runs under the server's V8 flags
 * (engine/src/node-flags.ts): without them, this script starts itself again with them.
 * `--no-server-flags` measures without.
 */
export function ensureServerNodeFlags(scriptUrl) {
  if (process.argv.includes('--no-server-flags')) return;
  const missing = missingServerNodeFlags();
  if (missing.length === 0) return;
  const script = fileURLToPath(scriptUrl);
  const r = spawnSync(process.execPath, [...missing, ...process.execArgv, script, ...process.argv.slice(2)], {
    stdio: 'inherit',
  });
  process.exit(r.status ?? 1);
}

/**
 * Runs `fn` (sync or async) while a 1 ms interval timer watches the event loop; returns its total
 * time and the longest gap between two ticks (ms): how long `fn` held this thread at a stretch.
 */
export async function loopGap(fn) {
  let max = 0;
  let last = performance.now();
  const iv = setInterval(() => {
    const n = performance.now();
    max = Math.max(max, n - last);
    last = n;
  }, 1);
  // The timer running first, so the first gap measured is fn's.
  await new Promise((r) => setTimeout(r, 20));
  max = 0;
  last = performance.now();
  const t = performance.now();
  await fn();
  const total = performance.now() - t;
  await new Promise((r) => setTimeout(r, 5));
  clearInterval(iv);
  return { total, maxGap: max };
}

export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}
export const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** Percentile bootstrap 95 % interval of `stat` over resamples of `xs` (fixed seed: reruns agree). */
export function bootstrap(xs, stat, n = 4000) {
  let seed = 12345;
  const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const out = [];
  for (let i = 0; i < n; i++) out.push(stat(xs.map(() => xs[Math.floor(rand() * xs.length)])));
  out.sort((a, b) => a - b);
  return [out[Math.floor(0.025 * n)], out[Math.floor(0.975 * n)]];
}

/**
 * Model names of a catalog (m00, m01, ... as e2e/src/catalog.ts writes them) drawn by Zipf(1) over
 * `n` models from a fixed seed: most draws are a few models, and most models are drawn seldom.
 */
export function zipfCatalogPicker(n) {
  const cdf = [];
  let sum = 0;
  for (let i = 0; i < n; i++) cdf.push((sum += 1 / (i + 1)));
  let seed = 7;
  return () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    const u = (seed / 2147483648) * sum;
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cdf[mid] < u) lo = mid + 1;
      else hi = mid;
    }
    return `m${String(lo).padStart(2, '0')}`;
  };
}
