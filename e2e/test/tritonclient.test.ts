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
    report = runPython<Report>('infer_examples.py', [server.grpcUrl(), server.httpUrl(), examplesDir]);
  });
  after(async () => {
    assert.equal(await server.stop(), 0, 'SIGTERM must drain and exit 0');
  });

  test('every check passed (gRPC, HTTP and system shared memory; relative error < 1e-4)', () => {
    const failed = report.checks.filter((c) => !c.ok);
    assert.deepEqual(failed, []);
    assert.ok(report.checks.length >= 30);
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
