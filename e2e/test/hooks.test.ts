import assert from 'node:assert/strict';
import { after, before, suite, test } from 'node:test';
import { examplesDir, runPython, startServer, type ServerProcess } from '../src/server-process.js';

interface Report {
  checks: { name: string; ok: boolean; detail: string }[];
  models: Record<string, Record<string, number>>;
}

suite('tritonclient against the bundles with hooks and the meta model', () => {
  let server: ServerProcess;
  let report: Report;
  before(async () => {
    server = await startServer();
    report = await runPython<Report>('infer_hooks.py', [server.grpcUrl(), server.httpUrl(), examplesDir]);
  });
  after(async () => {
    assert.equal(await server.stop(), 0, 'SIGTERM must drain and exit 0');
  });

  test('every check passed', () => {
    assert.deepEqual(
      report.checks.filter((c) => !c.ok),
      [],
    );
  });

  for (const model of ['grader', 'classify-image', 'two-stage']) {
    test(`${model}: every output matches its client reference over gRPC and HTTP`, () => {
      const r = report.models[model];
      assert.ok(r, `no results for ${model}`);
      for (const proto of ['grpc', 'http']) {
        const mine = Object.entries(r).filter(([k]) => k.startsWith(`${proto}:`));
        assert.ok(mine.length > 0, `${model}: no ${proto} result`);
      }
    });
  }
});
