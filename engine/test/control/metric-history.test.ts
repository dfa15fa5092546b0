/** p50 / p99 in the metric history, from the per-model latency histogram. */
import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { fillSamples, KEEPALIVE_SAMPLES, type MetricSample } from '../../src/control/events/metric-history.js';
import { LATENCY_BUCKETS, LatencyHistogram, percentilesMs } from '../../src/observability/latency-histogram.js';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig, workerSettings } from '../../src/config/node-config.js';
import { Worker } from '../../src/worker/worker.js';
import { examples, inferMlp, log, mlpControlFixture, startControl, tempDir } from './harness.js';

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
    assert.equal(h.total, 6, 'the total counts every sample');
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

suite('metric history rows: stored on change, filled on read', () => {
  const row = (at: number, requestsPerSecond = 0): MetricSample => ({
    at,
    requestsPerSecond,
    p50Ms: null,
    p99Ms: null,
    queueDepth: 0,
    residentBytes: 0,
    loads: 1,
    evictions: 0,
  });

  test('fillSamples: a copy per period between rows and up to the last sample; a longer gap stays one', () => {
    const got = fillSamples([row(1000, 2), row(4003, 5), row(200_000)], 1000, 70_000, 202_000);
    assert.deepEqual(
      got.map((r) => [r.at, r.requestsPerSecond]),
      [
        [1000, 2],
        [2000, 2],
        [3000, 2],
        [4003, 5],
        // 196 s from 4003 to 200000: nothing sampled the model then (a stop).
        [200_000, 0],
        [201_000, 0],
        [202_000, 0],
      ],
    );
    assert.deepEqual(fillSamples([row(1000)], 1000, 70_000, undefined).length, 1, 'a model no longer sampled');
  });

  const f = mlpControlFixture();
  const stored = async (since: number) => (await f.h.store.listMetricSamples('mlp', 's', since)).map((r) => r.at);
  const read = async (since: number) =>
    (
      await f.h.control.app.inject({
        method: 'GET',
        url: `/api/v1/models/mlp/metrics?resolution=s&sinceMs=${since}`,
        headers: { authorization: `Bearer ${f.admin}` },
      })
    ).json().data as MetricSample[];

  test("the port's loads() tell what models() tells, without the rest of the views", async () => {
    await inferMlp(f.worker);
    const [view] = f.h.port.models();
    const [load] = f.h.port.loads();
    assert.ok(view && load && view.stats && view.queue && view.residency);
    assert.deepEqual(load, {
      name: view.name,
      requestsServed: view.stats.requestsServed,
      queueDepth: view.queue.depth,
      residentBytes: view.residency.deviceResident ? view.residency.weightBytes : 0,
      loads: view.residency.loads,
      evictions: view.residency.evictions,
    });
    assert.ok(load.requestsServed >= 1 && load.residentBytes > 0);
    assert.equal(f.h.port.worker().inflight, 0);
  });

  test('an idle model stores its first sample, its changes and a keepalive; reads give every second', async () => {
    const t0 = 5_000_000;
    // A sample with a request before the window, so that the window's first sample is a change.
    await inferMlp(f.worker);
    f.h.control.history.tick(t0 - 1000);
    for (let k = 0; k <= 131; k++) {
      if (k === 70) await inferMlp(f.worker);
      f.h.control.history.tick(t0 + k * 1000);
    }
    // Not flushed yet: the read takes the rows not written too.
    const unflushed = await read(t0);
    assert.equal(unflushed.length, 132);
    await f.h.control.history.flush(t0 + 131_000);
    const rows = await stored(t0);
    const keepalive = KEEPALIVE_SAMPLES * 1000;
    // The first sample, a keepalive, the request's second and the quiet one after it, a keepalive.
    assert.deepEqual(rows, [t0, t0 + keepalive, t0 + 70_000, t0 + 71_000, t0 + 71_000 + keepalive]);
    const all = await read(t0);
    assert.deepEqual(
      all.map((r) => r.at),
      Array.from({ length: 132 }, (_, k) => t0 + k * 1000),
    );
    assert.equal(all.find((r) => r.at === t0 + 70_000)!.requestsPerSecond, 1);
    assert.equal(all.find((r) => r.at === t0 + 69_000)!.requestsPerSecond, 0);
    // A window that starts between stored rows is filled from the row before it.
    const tail = await read(t0 + 100_000);
    assert.equal(tail.length, 32);
    assert.equal(tail[0]!.at, t0 + 100_000);
  });
});

suite('metric history: a model gone from the repository', () => {
  test('its minute so far is stored, the feed removes it, and it is forgotten', async () => {
    const repo = mkdtempSync(join(tmpdir(), 'hlo-history-'));
    cpSync(join(examples, 'mlp'), join(repo, 'mlp'), { recursive: true });
    const base = workerSettings(defaultConfig(repo));
    const settings = {
      ...base,
      modelControlMode: 'dynamic' as const,
      modelPollSeconds: 86400,
      modelSettleSeconds: 0.05,
      endpoints: { ...base.endpoints, host: '127.0.0.1', grpcPort: 0, httpPort: 0, metricsPort: -1, consolePort: -1 },
    };
    const worker = await Worker.start({ modelRepo: repo, settings, log });
    const dir = tempDir();
    const h = await startControl(worker, dir, { settings });
    try {
      const t0 = 9_000_000;
      h.control.history.tick(t0);
      for (let i = 0; i < 4; i++) await inferMlp(worker);
      h.control.history.tick(t0 + 1000);
      rmSync(join(repo, 'mlp'), { recursive: true });
      const until = Date.now() + 30_000;
      while (h.port.loads().length > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      assert.equal(h.port.loads().length, 0, 'the removed bundle was not unloaded');
      h.control.history.tick(t0 + 2000);
      await h.control.history.flush(t0 + 2000);
      const minute = await h.store.listMetricSamples('mlp', 'm', 0);
      assert.deepEqual(
        minute.map((r) => [r.at, r.requestsPerSecond]),
        [[t0, 2]],
        'the minute it was in: two samples, 0 and 4 requests/s',
      );
      const snap = JSON.parse(h.control.context.hub.topic('metrics').snapshotText()) as { data: { items: object } };
      assert.deepEqual(snap.data.items, {}, 'the feed no longer holds it');
      // Forgotten: a minute later nothing more is stored for it.
      h.control.history.tick(t0 + 62_000);
      await h.control.history.flush(t0 + 62_000);
      assert.equal((await h.store.listMetricSamples('mlp', 'm', 0)).length, 1);
    } finally {
      await h.close();
      await worker.stop(false);
      rmSync(repo, { recursive: true, force: true });
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
