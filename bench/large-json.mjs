// bench/large-json: small gRPC ModelInfer latency (mlp, 1 row) without and while a large JSON body
// is received and decoded by the same in-process server (the issue's "other requests' p99 within
// 2x"). Each round: `--baseline` seconds of small requests alone, then small requests until the
// large body's answer (400: more rows than mlp serves, after the whole body was decoded).
// Usage: npm run build && nice -n 10 node bench/large-json.mjs [--mb 200] [--rounds 3] [--concurrency 2]
import { parseArgs } from 'node:util';
import { largeJsonBody, measureLargeJson, percentile } from '../engine/dist/test/kserve/large-json.js';
import { startSurface } from '../engine/dist/test/kserve/surface.js';
import { machine } from './stats.mjs';

const { values } = parseArgs({
  options: {
    mb: { type: 'string', default: '200' },
    rounds: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '2' },
    baseline: { type: 'string', default: '5' },
  },
});
const s = await startSurface({ maxJsonBytes: 256 * 2 ** 20 }, { maxRecvMsgBytes: 256 * 2 ** 20 });
await s.http.listen({ host: '127.0.0.1', port: 0 });
const port = s.http.server.address().port;
const { body } = largeJsonBody(Number(values.mb) * 1e6);
console.log(
  `# bench/large-json, machine: ${machine()}, body ${(body.byteLength / 1e6).toFixed(0)} MB, concurrency ${values.concurrency}`,
);
console.log(
  '| round | big answer | big ms | n before | p50 before ms | p99 before ms | n during | p50 during ms | p99 during ms | p99 ratio | failures |',
);
console.log('|---|---|---|---|---|---|---|---|---|---|---|');
try {
  for (let round = 1; round <= Number(values.rounds); round++) {
    const r = await measureLargeJson(s, port, body, {
      baselineMs: Number(values.baseline) * 1000,
      concurrency: Number(values.concurrency),
    });
    const b = r.baseline.latenciesMs;
    const d = r.during.latenciesMs;
    const f = (x) => x.toFixed(2);
    console.log(
      `| ${round} | ${r.big.status} | ${r.bigMs.toFixed(0)} | ${b.length} | ${f(percentile(b, 50))} | ${f(percentile(b, 99))} | ${d.length} | ` +
        `${f(percentile(d, 50))} | ${f(percentile(d, 99))} | ${f(percentile(d, 99) / percentile(b, 99))} | ${r.baseline.failures.length + r.during.failures.length} |`,
    );
  }
} finally {
  await s.close();
}
