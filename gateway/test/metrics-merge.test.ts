import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { mergeExpositions } from '@hloserve/gateway/metrics-merge';

suite('merged /metrics', () => {
  test("each worker's samples get a worker label; one family keeps one HELP/TYPE and stays together", () => {
    const worker = (n: number) =>
      [
        '# HELP nv_inference_count Inferences.',
        '# TYPE nv_inference_count counter',
        `nv_inference_count{model="mlp",version="1"} ${n}`,
        '# HELP up_seconds Uptime.',
        '# TYPE up_seconds gauge',
        `up_seconds ${n}`,
        '# HELP lat Latency.',
        '# TYPE lat histogram',
        `lat_bucket{le="1"} ${n}`,
        `lat_sum ${n}`,
        `lat_count ${n}`,
      ].join('\n');
    const own = '# HELP gw_total Own.\n# TYPE gw_total counter\ngw_total 7\n';
    const text = mergeExpositions([
      { text: own, worker: null },
      { text: worker(1), worker: 'w0' },
      { text: worker(2), worker: 'w1' },
    ]);
    assert.equal(
      text,
      [
        '# HELP gw_total Own.',
        '# TYPE gw_total counter',
        'gw_total 7',
        '# HELP nv_inference_count Inferences.',
        '# TYPE nv_inference_count counter',
        'nv_inference_count{worker="w0",model="mlp",version="1"} 1',
        'nv_inference_count{worker="w1",model="mlp",version="1"} 2',
        '# HELP up_seconds Uptime.',
        '# TYPE up_seconds gauge',
        'up_seconds{worker="w0"} 1',
        'up_seconds{worker="w1"} 2',
        '# HELP lat Latency.',
        '# TYPE lat histogram',
        'lat_bucket{worker="w0",le="1"} 1',
        'lat_sum{worker="w0"} 1',
        'lat_count{worker="w0"} 1',
        'lat_bucket{worker="w1",le="1"} 2',
        'lat_sum{worker="w1"} 2',
        'lat_count{worker="w1"} 2',
        '',
      ].join('\n'),
    );
  });
});
