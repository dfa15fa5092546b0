import assert from 'node:assert/strict';
import { after, before, suite, test } from 'node:test';
import { largeJsonBody, measureLargeJson, percentile } from './large-json.js';
import { startSurface, type Surface } from './surface.js';

// The done-when: a 200 MB JSON body, under the limits, neither ends the process nor stops
// other requests. Latency ratios on a shared 2-core machine are not a stable assertion; the p99
// ratio is measured by bench/large-json.mjs. This test asserts what must always hold.
suite('a 200 MB JSON body while small gRPC requests run', () => {
  let s: Surface;
  let port: number;
  before(async () => {
    s = await startSurface({ maxJsonBytes: 256 * 2 ** 20 }, { maxRecvMsgBytes: 256 * 2 ** 20 });
    await s.http.listen({ host: '127.0.0.1', port: 0 });
    port = (s.http.server.address() as { port: number }).port;
  });
  after(() => s.close());

  test('is decoded off the event loop and refused for its rows; every small request succeeds meanwhile', async () => {
    const { body, rows } = largeJsonBody(200e6);
    assert.ok(body.byteLength > 190e6);
    const r = await measureLargeJson(s, port, body, { baselineMs: 1000, concurrency: 2 });
    assert.equal(r.big.status, 400, r.big.text.slice(0, 300));
    assert.match(r.big.text, new RegExp(`batch of ${rows} rows`));
    assert.deepEqual(r.during.failures, []);
    assert.deepEqual(r.baseline.failures, []);
    assert.ok(r.during.latenciesMs.length >= 10, `${r.during.latenciesMs.length} small requests while it was decoded`);
    console.log(
      `# 200 MB JSON answered in ${r.bigMs.toFixed(0)} ms; small gRPC p50/p99 ` +
        `${percentile(r.baseline.latenciesMs, 50).toFixed(2)}/${percentile(r.baseline.latenciesMs, 99).toFixed(2)} ms before, ` +
        `${percentile(r.during.latenciesMs, 50).toFixed(2)}/${percentile(r.during.latenciesMs, 99).toFixed(2)} ms during ` +
        `(${r.during.latenciesMs.length} requests)`,
    );
  });

  test('the server serves a normal JSON request afterwards', async () => {
    const { body } = largeJsonBody(1);
    const r = await s.http.inject({ method: 'POST', url: '/v2/models/mlp/infer', payload: body });
    assert.equal(r.statusCode, 200, r.body.slice(0, 300));
  });
});
