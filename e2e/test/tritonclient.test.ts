import assert from 'node:assert/strict';
import { after, before, suite, test } from 'node:test';
import { examplesDir, runPython, startServer, type ServerProcess } from '../src/server-process.js';

interface Report {
  checks: { name: string; ok: boolean; detail: string }[];
  models: Record<string, Record<string, number>>;
}

suite("Triton's own Python clients against hloserve on the example models", () => {
  let server: ServerProcess;
  let report: Report;
  before(async () => {
    server = await startServer();
    report = await runPython<Report>('infer_examples.py', [server.grpcUrl(), server.httpUrl(), examplesDir]);
  });
  after(async () => {
    assert.equal(await server.stop(), 0, 'SIGTERM must drain and exit 0');
  });

  test('every check passed (gRPC, HTTP and system shared memory; relative error < 1e-4)', () => {
    const failed = report.checks.filter((c) => !c.ok);
    assert.deepEqual(failed, []);
    assert.ok(report.checks.length >= 30);
  });

  test('Prometheus /metrics carries Triton names with the traffic just served', async () => {
    const text = await (await fetch(`http://127.0.0.1:${server.ports.metrics}/metrics`)).text();
    for (const model of ['mlp', 'resnet', 'fno']) {
      const m = new RegExp(`^nv_inference_request_success\\{model="${model}",version="1"\\} (\\d+)`, 'm').exec(text);
      assert.ok(m && Number(m[1]) >= 3, `nv_inference_request_success for ${model}: ${m?.[1]}`);
    }
    for (const name of [
      'nv_inference_queue_duration_us',
      'nv_inference_compute_infer_duration_us',
      'nv_inference_exec_count',
      'hloserve_weight_resident_bytes',
      'hloserve_request_latency_seconds_bucket',
    ]) {
      assert.match(text, new RegExp(`^${name}`, 'm'), name);
    }
    const ready = await fetch(`http://127.0.0.1:${server.ports.metrics}/readyz`);
    assert.equal(ready.status, 200);
  });

  for (const model of ['mlp', 'resnet', 'fno']) {
    test(`${model}: outputs match the bundle's reference over gRPC, HTTP and shared memory`, () => {
      const errs = report.models[model];
      assert.ok(errs, `no results for ${model}`);
      for (const kind of ['grpc', 'http', 'shm']) {
        const mine = Object.entries(errs).filter(([k]) => k.startsWith(`${kind}:`));
        assert.ok(mine.length > 0, `${model}: no ${kind} result`);
        for (const [k, v] of mine) assert.ok(v < 1e-4, `${model} ${k}: relative error ${v}`);
      }
    });
  }
});
