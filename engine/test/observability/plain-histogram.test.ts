import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { Histogram, Registry } from 'prom-client';
import { histogramText } from '../../src/observability/exposition.js';
import { PlainHistogram } from '../../src/observability/plain-histogram.js';

const text = async (h: PlainHistogram<'model'>): Promise<string> => {
  const lines: string[] = [];
  await histogramText(h.capture(), lines);
  return lines.join('\n');
};

const BUCKETS = [0.001, 0.01, 0.1, 1];

suite('PlainHistogram: the same exposition as prom-client, without its per-observe cost', () => {
  test('bucket, sum and count lines match a prom-client Histogram fed the same values', async () => {
    const ours = new Registry();
    const theirs = new Registry();
    const h = new PlainHistogram({
      name: 'lat',
      help: 'latency',
      labelName: 'model',
      buckets: BUCKETS,
      registry: ours,
    });
    const p = new Histogram({
      name: 'lat',
      help: 'latency',
      labelNames: ['model'],
      buckets: BUCKETS,
      registers: [theirs],
    });
    // Boundaries are inclusive; values above the last bound land only in +Inf.
    const seen: Array<[string, number]> = [
      ['a', 0.001],
      ['a', 0.0005],
      ['a', 0.05],
      ['b', 3],
      ['a', 1],
      ['b', 0.01],
    ];
    for (const [m, v] of seen) {
      h.observe(m, v);
      p.observe({ model: m }, v);
    }
    assert.equal(await ours.metrics(), await theirs.metrics());
    assert.equal(await text(h), await theirs.getSingleMetricAsString('lat'), 'the yielding exposition too');
  });

  test('exposition: escapes, +Inf, NaN and many series a few at a time, as prom-client formats them', async () => {
    const r = new Registry();
    const h = new PlainHistogram({
      name: 'y',
      help: 'a \\ help\nline',
      labelName: 'model',
      buckets: [0.5, 2],
      registry: r,
    });
    const names = ['plain', 'quo"te', 'back\\slash', 'new\nline', ...Array.from({ length: 300 }, (_, i) => `m${i}`)];
    names.forEach((n, i) => h.observe(n, i % 3 === 0 ? Number.NaN : i * 0.01));
    h.observe('plain', Number.POSITIVE_INFINITY);
    assert.equal(await text(h), await r.getSingleMetricAsString('y'));
  });

  test('buckets are cumulative and +Inf equals the count', async () => {
    const r = new Registry();
    const h = new PlainHistogram({ name: 'x', help: 'x', labelName: 'model', buckets: [1, 2], registry: r });
    h.observe('m', 0.5);
    h.observe('m', 2);
    h.observe('m', 5);
    const text = await r.metrics();
    assert.match(text, /^x_bucket\{le="1",model="m"\} 1$/m);
    assert.match(text, /^x_bucket\{le="2",model="m"\} 2$/m);
    assert.match(text, /^x_bucket\{le="\+Inf",model="m"\} 3$/m);
    assert.match(text, /^x_sum\{model="m"\} 7.5$/m);
    assert.match(text, /^x_count\{model="m"\} 3$/m);
  });

  test('remove drops one series; reset drops all; the family stays declared', async () => {
    const r = new Registry();
    const h = new PlainHistogram({ name: 'x', help: 'x', labelName: 'model', buckets: [1], registry: r });
    h.observe('a', 1);
    h.observe('b', 1);
    h.remove('a');
    let text = await r.metrics();
    assert.doesNotMatch(text, /model="a"/);
    assert.match(text, /model="b"/);
    r.resetMetrics();
    text = await r.metrics();
    assert.match(text, /# TYPE x histogram/);
    assert.doesNotMatch(text, /model="b"/);
  });

  test('a name already registered is refused', () => {
    const r = new Registry();
    new PlainHistogram({ name: 'x', help: 'x', labelName: 'model', buckets: [1], registry: r });
    assert.throws(
      () => new PlainHistogram({ name: 'x', help: 'x', labelName: 'model', buckets: [1], registry: r }),
      /already been registered/,
    );
  });
});
