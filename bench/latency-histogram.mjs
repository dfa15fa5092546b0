// Cost of recording one request's latency in the per-model histogram (the request path's share of
// the metric history's p50 / p99), against a loop that does the same work without the histogram.
// usage: node bench/latency-histogram.mjs [rounds=5] [n=10000000]
import { LatencyHistogram } from '../engine/dist/src/observability/latency-histogram.js';

const rounds = Number(process.argv[2] ?? 5);
const n = Number(process.argv[3] ?? 10_000_000);
// Latencies from 50 µs to 50 ms, as a real mix would spread over many buckets.
const values = Float64Array.from({ length: 4096 }, (_, i) => 50e-6 * 1000 ** (((i * 2654435761) % 4096) / 4096));

function baseline() {
  let sink = 0;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) sink += values[i & 4095];
  return [Number(process.hrtime.bigint() - t0) / n, sink];
}

function withHistogram() {
  const h = new LatencyHistogram();
  let sink = 0;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const v = values[i & 4095];
    sink += v;
    h.add(v);
  }
  return [Number(process.hrtime.bigint() - t0) / n, sink + h.counts[0]];
}

const base = [];
const hist = [];
for (let r = 0; r < rounds; r++) {
  // Alternating, so drift on a shared machine hits both alike.
  base.push(baseline()[0]);
  hist.push(withHistogram()[0]);
}
const median = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
console.log(
  JSON.stringify({
    n,
    rounds,
    baselineNsPerOp: +median(base).toFixed(2),
    withHistogramNsPerOp: +median(hist).toFixed(2),
    addNs: +(median(hist) - median(base)).toFixed(2),
    rounds_ns: { baseline: base.map((x) => +x.toFixed(2)), histogram: hist.map((x) => +x.toFixed(2)) },
  }),
);
