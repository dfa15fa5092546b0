import assert from 'node:assert/strict';
import { after, before, suite, test } from 'node:test';
import { runPerfAnalyzer } from '../src/perf-analyzer.js';
import { startServer, type ServerProcess } from '../src/server-process.js';

suite("Triton's perf_analyzer completes against hloserve with zero errors", () => {
  let server: ServerProcess;
  before(async () => {
    server = await startServer({ HLOSERVE_MODELS_INCLUDE: 'mlp' });
  });
  after(async () => {
    assert.equal(await server.stop(), 0);
  });

  const common = () => [
    '-m',
    'mlp',
    '-u',
    server.grpcUrl(),
    '-i',
    'grpc',
    '--concurrency-range',
    '1:4:3',
    '-p',
    '1000',
    '-s',
    '60',
    '-r',
    '4',
  ];

  test('gRPC, inline tensors', () => {
    const r = runPerfAnalyzer(common());
    assert.equal(r.status, 0, r.output);
    assert.doesNotMatch(r.output, /error|failed/i);
    assert.ok(r.rows.get(1)!.throughput > 0 && r.rows.get(4)!.throughput > 0, r.output);
  });

  test('gRPC, system shared memory for inputs and outputs', () => {
    const r = runPerfAnalyzer([...common(), '--shared-memory', 'system', '--output-shared-memory-size', '4096']);
    assert.equal(r.status, 0, r.output);
    assert.doesNotMatch(r.output, /error|failed/i);
    assert.ok(r.rows.get(4)!.throughput > 0, r.output);
  });
});
