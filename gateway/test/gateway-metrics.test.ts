import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { GatewayMetrics } from '@hloserve/gateway/gateway-metrics';

const render = (m: GatewayMetrics) =>
  m.render({
    maxInFlight: 1,
    workers: [],
    placement: new Map(),
    routes: 0,
    repacks: 0,
    reweighs: 0,
    joins: 0,
    measuredSpread: 1,
    replicaFactors: new Map(),
    workerFactors: new Map(),
    workerDebts: new Map(),
  });

suite('the gateway request counters', () => {
  test('one series per (protocol, model, code), each counted apart', () => {
    const m = new GatewayMetrics();
    m.count('grpc', 'mlp', 'OK', 0.001);
    m.count('grpc', 'mlp', 'OK', 0.001);
    m.count('http', 'mlp', 'OK', 0.001);
    m.count('grpc', 'mlp', 'NOT_FOUND', 0.001);
    m.count('grpc', 'cnn', 'OK', 0.001);
    // A protocol, code and model that concatenate alike must not share a series.
    m.count('grpc', 'OK', 'mlp', 0.001);
    const lines = render(m)
      .split('\n')
      .filter((l) => l.startsWith('hloserve_gateway_requests_total{'));
    assert.deepEqual(lines.sort(), [
      'hloserve_gateway_requests_total{protocol="grpc",model="OK",code="mlp"} 1',
      'hloserve_gateway_requests_total{protocol="grpc",model="cnn",code="OK"} 1',
      'hloserve_gateway_requests_total{protocol="grpc",model="mlp",code="NOT_FOUND"} 1',
      'hloserve_gateway_requests_total{protocol="grpc",model="mlp",code="OK"} 2',
      'hloserve_gateway_requests_total{protocol="http",model="mlp",code="OK"} 1',
    ]);
    assert.match(render(m), /^hloserve_gateway_request_seconds_count 6$/m);
  });

  test('a model name with quotes or a newline cannot break the exposition', () => {
    const m = new GatewayMetrics();
    m.count('grpc', 'a"b\nc\\', 'OK', 0);
    assert.match(render(m), /^hloserve_gateway_requests_total\{protocol="grpc",model="a_b_c_",code="OK"\} 1$/m);
  });
});
