import assert from 'node:assert/strict';
import { after, before, suite, test } from 'node:test';
import { grpcLoadArgs, runPerfAnalyzerCounted } from '../src/perf-analyzer.js';
import { readMetric, startServer, type ServerProcess } from '../src/server-process.js';

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
  // perf_analyzer's own stall in this mode is made again; one with an answer owed is a failure.
  const run = (args: string[]) =>
    runPerfAnalyzerCounted(args, { inFlight: () => readMetric(server.ports.metrics, 'hloserve_inflight_requests') });

  test('gRPC, inline tensors', async () => {
    const r = await run(common());
    assert.equal(r.status, 0, r.output);
    assert.doesNotMatch(r.output, /error|failed/i);
    assert.ok(r.rows.get(4)!.throughput > 0, r.output);
  });

  test('gRPC, streaming (ModelStreamInfer, one bidi stream per caller)', async () => {
    const r = await run([...common(), '--streaming']);
    assert.equal(r.status, 0, r.output);
    assert.doesNotMatch(r.output, /error|failed/i);
    assert.ok(r.rows.get(4)!.throughput > 0, r.output);
  });

  test('gRPC, system shared memory for inputs and outputs', async () => {
    const r = await run([...common(), '--shared-memory', 'system', '--output-shared-memory-size', '4096']);
    assert.equal(r.status, 0, r.output);
    assert.doesNotMatch(r.output, /error|failed/i);
    assert.ok(r.rows.get(4)!.throughput > 0, r.output);
  });
});
