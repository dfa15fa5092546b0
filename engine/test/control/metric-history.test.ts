/** p50 / p99 in the metric history, from the per-model latency histogram. */
import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { LATENCY_BUCKETS, LatencyHistogram, percentilesMs } from '../../src/observability/latency-histogram.js';
import { inferMlp, mlpControlFixture } from './harness.js';

const near = (got: number | null, want: number, rel = 0.05) =>
  assert.ok(got !== null && Math.abs(got - want) <= want * rel, `${got} is not within ${rel * 100} % of ${want}`);

suite('latency histogram', () => {
  test('percentiles are within half a bucket (at most 3.2 %) of the samples', () => {
    const h = new LatencyHistogram();
    for (let i = 0; i < 980; i++) h.add(0.001);
    for (let i = 0; i < 20; i++) h.add(0.1);
    const [p50, p99, p100] = percentilesMs(h.counts, [0.5, 0.99, 1]);
    near(p50!, 1);
    near(p99!, 100);
    near(p100!, 100);
    assert.deepEqual(percentilesMs(new Uint32Array(LATENCY_BUCKETS), [0.5]), [null]);
  });

  test('out-of-range samples land in the end buckets, never outside', () => {
    const h = new LatencyHistogram();
    for (const s of [0, -1, Number.NaN, 1e-9, 1e6, Number.POSITIVE_INFINITY]) h.add(s);
    assert.equal(
      h.counts.reduce((a, b) => a + b, 0),
      6,
    );
    assert.equal(h.counts[0], 4);
    assert.equal(h.counts[LATENCY_BUCKETS - 1], 2);
  });
});

suite('metric history p50 / p99 (real Worker, SQLite)', () => {
  const f = mlpControlFixture();

  async function infer(): Promise<number> {
    const t0 = performance.now();
    await inferMlp(f.worker);
    return performance.now() - t0;
  }

  const rows = async (resolution: 's' | 'm') =>
    (
      await f.h.control.app.inject({
        method: 'GET',
        url: `/api/v1/models/mlp/metrics?resolution=${resolution}`,
        headers: { authorization: `Bearer ${f.admin}` },
      })
    ).json().data as { at: number; p50Ms: number | null; p99Ms: number | null; requestsPerSecond: number }[];

  test('a second with requests carries their p50 and p99; a quiet one carries null', async () => {
    const t0 = 1_000_000;
    f.h.control.history.tick(t0);
    const seen: number[] = [];
    for (let i = 0; i < 40; i++) seen.push(await infer());
    f.h.control.history.tick(t0 + 1000);
    f.h.control.history.tick(t0 + 2000);
    f.h.control.history.tick(t0 + 61_000);
    await f.h.control.history.flush(t0 + 61_000);
    const s = await rows('s');
    const busy = s.find((r) => r.at === t0 + 1000)!;
    const quiet = s.find((r) => r.at === t0 + 2000)!;
    assert.equal(busy.requestsPerSecond, 40);
    assert.ok(busy.p50Ms !== null && busy.p99Ms !== null, JSON.stringify(busy));
    assert.ok(busy.p50Ms <= busy.p99Ms);
    // The server's time is within the client's (which adds nothing but a promise hop here).
    seen.sort((a, b) => a - b);
    assert.ok(busy.p99Ms <= seen[seen.length - 1]! * 1.05, `p99 ${busy.p99Ms} vs slowest ${seen.at(-1)}`);
    assert.ok(busy.p50Ms > 0);
    assert.equal(quiet.p50Ms, null);
    assert.equal(quiet.p99Ms, null);
    const m = (await rows('m')).find((r) => r.at === t0)!;
    assert.ok(m, 'a minute row');
    assert.equal(m.p50Ms, busy.p50Ms, 'the minute holds the same 40 requests');
    assert.equal(m.p99Ms, busy.p99Ms);
  });
});
