import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { Metrics, type RequestSample } from '../../src/observability/metrics.js';

const sample = (model: string, patch: Partial<RequestSample> = {}): RequestSample => ({
  model,
  ok: true,
  batchRows: 1,
  totalUs: 1000,
  queueUs: 100,
  computeInputUs: 10,
  computeInferUs: 800,
  computeOutputUs: 20,
  ...patch,
});

/** The value of one exposition line, or undefined when the series is absent. */
function value(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

suite('metrics: per-request counters summed and published at scrape time', () => {
  test('successes, failures by reason, rows and durations per model', async () => {
    const m = new Metrics({ defaultMetrics: false });
    m.request(sample('a', { batchRows: 3 }));
    m.request(sample('a', { batchRows: 2, totalUs: 3000 }));
    m.request(sample('a', { ok: false, reason: 'REJECTED', batchRows: 1, totalUs: 50, computeInferUs: 0 }));
    m.request(sample('b', { ok: false, reason: 'CANCELED' }));
    m.request(sample('b', { ok: false }));
    const text = await m.text();
    const a = '{model="a",version="1"}';
    const b = '{model="b",version="1"}';
    assert.equal(value(text, `nv_inference_request_success${a}`), 2);
    assert.equal(value(text, `nv_inference_count${a}`), 5);
    assert.equal(value(text, `nv_inference_request_failure{model="a",version="1",reason="REJECTED"}`), 1);
    assert.equal(value(text, `nv_inference_request_duration_us${a}`), 4050);
    assert.equal(value(text, `nv_inference_queue_duration_us${a}`), 300);
    assert.equal(value(text, `nv_inference_compute_input_duration_us${a}`), 30);
    assert.equal(value(text, `nv_inference_compute_infer_duration_us${a}`), 1600);
    assert.equal(value(text, `nv_inference_compute_output_duration_us${a}`), 60);
    // A model that only failed still has its success series, at 0, as Triton reports it.
    assert.equal(value(text, `nv_inference_request_success${b}`), 0);
    assert.equal(value(text, `nv_inference_request_failure{model="b",version="1",reason="CANCELED"}`), 1);
    assert.equal(value(text, `nv_inference_request_failure{model="b",version="1",reason="OTHER"}`), 1);
    assert.equal(value(text, `hloserve_request_latency_seconds_count{model="a"}`), 3);
    // le is inclusive: 1000 µs and 50 µs fall in the 1 ms bucket, 3000 µs does not.
    assert.equal(value(text, `hloserve_request_latency_seconds_bucket{le="0.001",model="a"}`), 2);
  });

  test("text() answers what the registry's own formatting does, a family at a time", async () => {
    // Without the process's own metrics, which change between two scrapes.
    const m = new Metrics({ defaultMetrics: false });
    // 1,100 models: every per-model family is formatted over more than one turn.
    for (let i = 0; i < 1100; i++) m.request(sample(`m${i}`, { totalUs: 100 * i, ok: i % 7 !== 0 }));
    assert.equal(await m.text(), await m.registry.metrics());
  });

  test('a scrape is the instant it was asked for, though it is formatted over several turns', async () => {
    const m = new Metrics({ defaultMetrics: false });
    for (let i = 0; i < 1100; i++) m.request(sample(`m${i}`));
    const scrape = m.text();
    m.request(sample('m0'));
    m.request(sample('late'));
    const text = await scrape;
    assert.equal(value(text, 'nv_inference_request_success{model="m0",version="1"}'), 1);
    assert.equal(value(text, 'hloserve_request_latency_seconds_count{model="m0"}'), 1);
    assert.doesNotMatch(text, /model="late"/);
  });

  test('a second scrape reports the running totals, not the increments since the first', async () => {
    const m = new Metrics({ defaultMetrics: false });
    m.request(sample('a'));
    await m.text();
    m.request(sample('a'));
    const text = await m.text();
    assert.equal(value(text, 'nv_inference_request_success{model="a",version="1"}'), 2);
    assert.equal(value(text, 'nv_inference_request_duration_us{model="a",version="1"}'), 2000);
  });

  test('no requests yet: the families are declared and hold no series', async () => {
    const text = await new Metrics({ defaultMetrics: false }).text();
    assert.match(text, /# TYPE nv_inference_request_success counter/);
    assert.doesNotMatch(text, /^nv_inference_request_success\{/m);
  });
});

suite('metrics: per-dispatch and gauge values published at scrape time', () => {
  test('executions, their device time and batch sizes per model, in-flight read from the worker when scraped', async () => {
    const m = new Metrics({ defaultMetrics: false });
    let inflight = 3;
    m.trackInflight(() => inflight);
    m.execution('a', 8, 0.002);
    m.execution('a', 32, 0.005);
    m.execution('b', 1, 0.0005);
    let text = await m.text();
    assert.equal(value(text, 'nv_inference_exec_count{model="a",version="1"}'), 2);
    assert.equal(value(text, 'nv_inference_exec_count{model="b",version="1"}'), 1);
    // Each execution once, whatever it served (Triton's compute_infer would count a batch per request).
    assert.equal(value(text, 'hloserve_execution_duration_us{model="a",version="1"}'), 7000);
    assert.equal(value(text, 'hloserve_execution_duration_us{model="b",version="1"}'), 500);
    assert.equal(value(text, 'hloserve_batch_size_bucket{le="8",model="a"}'), 1);
    assert.equal(value(text, 'hloserve_batch_size_bucket{le="32",model="a"}'), 2);
    assert.equal(value(text, 'hloserve_batch_size_sum{model="a"}'), 40);
    assert.equal(value(text, 'hloserve_inflight_requests'), 3);
    inflight = 0;
    text = await m.text();
    assert.equal(value(text, 'hloserve_inflight_requests'), 0);
  });

  test("the console feed's connections read from its hub when scraped (0 with no console)", async () => {
    const m = new Metrics({ defaultMetrics: false });
    assert.equal(value(await m.text(), 'hloserve_console_feed_clients'), 0);
    let clients = 2;
    m.trackFeedClients(() => clients);
    assert.equal(value(await m.text(), 'hloserve_console_feed_clients'), 2);
    clients = 1;
    assert.equal(value(await m.text(), 'hloserve_console_feed_clients'), 1);
  });
});
