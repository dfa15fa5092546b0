import assert from 'node:assert/strict';
import { after, before, suite, test } from 'node:test';
import { grpcLoadArgs, runPerfAnalyzer } from '../src/perf-analyzer.js';
import { startServer, type ServerProcess } from '../src/server-process.js';

suite("Triton's perf_analyzer completes against hloserve with zero errors", () => {
  let server: ServerProcess;
  before(async () => {
    server = await startServer({ HLOSERVE_MODELS_INCLUDE: 'mlp' });
  });
  after(async () => {
    assert.equal(await server.stop(), 0);
  });

  // A fixed request count, not perf_analyzer's stability search: this is a correctness test and
  // must not depend on how quiet the machine is.
  const common = () => [...grpcLoadArgs('mlp', server.grpcUrl(), 4), '--request-count', '1500'];

  test('gRPC, inline tensors', () => {
    const r = runPerfAnalyzer(common());
    assert.equal(r.status, 0, r.output);
    assert.doesNotMatch(r.output, /error|failed/i);
    assert.ok(r.rows.get(4)!.throughput > 0, r.output);
  });

  test('gRPC, streaming (ModelStreamInfer, one bidi stream per caller)', () => {
    const r = runPerfAnalyzer([...common(), '--streaming']);
    assert.equal(r.status, 0, r.output);
    assert.doesNotMatch(r.output, /error|failed/i);
    assert.ok(r.rows.get(4)!.throughput > 0, r.output);
  });

  test('gRPC, system shared memory for inputs and outputs', () => {
    const r = runPerfAnalyzer([...common(), '--shared-memory', 'system', '--output-shared-memory-size', '4096']);
    assert.equal(r.status, 0, r.output);
    assert.doesNotMatch(r.output, /error|failed/i);
    assert.ok(r.rows.get(4)!.throughput > 0, r.output);
  });
});
