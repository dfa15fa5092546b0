import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, suite, test } from 'node:test';
import { grpcLoadArgs, runPerfAnalyzerCounted } from '../src/perf-analyzer.js';
import { examplesDir, readMetric, runPython, startServer, type ServerProcess } from '../src/server-process.js';

interface Report {
  checks: { name: string; ok: boolean; detail: string }[];
  models: Record<string, Record<string, number>>;
}

const metric = (text: string, re: RegExp) => [...text.matchAll(re)].map((m) => Number(m[1]));

suite('three CPU workers behind the supervisor and the gateway, one endpoint', () => {
  let server: ServerProcess;
  let state = '';
  before(async () => {
    // A fresh operations store (the compile cache stays warm), so the workers issue a setup token.
    state = mkdtempSync(join(tmpdir(), 'hloserve-fleet-state-'));
    server = await startServer({ HLOSERVE_STATE_URL: `sqlite:${join(state, 'state.sqlite')}` }, 300_000, [
      '--workers',
      '3',
      '--base-port',
      '0',
      '--routing',
      'round_robin',
    ]);
  });
  after(async () => {
    assert.equal(await server.stop(), 0, 'SIGTERM drains the gateway and every worker, exit 0');
    const stopped = server.logs.filter((l) => l.includes('"msg":"stopped"'));
    assert.equal(stopped.length, 4, 'three workers and the supervisor log that they stopped');
    rmSync(state, { recursive: true, force: true });
  });

  test("Triton's Python clients pass every check through the gateway (gRPC, its bidi stream, HTTP, system shared memory)", async () => {
    const report = await runPython<Report>('infer_examples.py', [server.grpcUrl(), server.httpUrl(), examplesDir]);
    const failed = report.checks.filter((c) => !c.ok);
    assert.deepEqual(failed, []);
    for (const [model, errs] of Object.entries(report.models)) {
      for (const [k, v] of Object.entries(errs)) assert.ok(v < 1e-4, `${model} ${k}: relative error ${v}`);
    }
    // Round robin spread the traffic: every worker served some of it.
    const text = await (await fetch(`http://127.0.0.1:${server.ports.metrics}/metrics`)).text();
    for (const w of ['worker0', 'worker1', 'worker2']) {
      const served = metric(
        text,
        new RegExp(`^nv_inference_request_success\\{worker="${w}",model="mlp"[^}]*\\} (\\d+)`, 'gm'),
      );
      assert.ok(served.length === 1 && served[0]! > 0, `${w} served mlp: ${served}`);
    }
    assert.match(text, /^hloserve_gateway_requests_total\{protocol="grpc",model="mlp",code="OK"\} \d+/m);
  });

  test("the console port is the fleet's: placements from the gateway (auth by worker0's session), the rest passed through", async () => {
    const base = `http://127.0.0.1:${server.ports.console}`;
    const health = await fetch(`${base}/api/v1/health`);
    assert.equal(health.status, 200, 'a worker route passes through');
    assert.equal(
      (await fetch(`${base}/api/v1/placements`)).status,
      401,
      'no token: refused by the worker the gateway asked',
    );
    // Each worker logs a setup token at first start; the workers share one state store, so the one
    // still valid is the latest issued. Exchanged through the gateway (passed through to worker0).
    const tokens = server.logs
      .map((l) => (/#setup=([A-Za-z0-9._~-]+)/.exec(l) ?? /"setupToken"\s*:\s*"([^"]+)"/.exec(l))?.[1])
      .filter((t): t is string => t !== undefined)
      .reverse();
    assert.ok(tokens.length > 0, 'the workers log a setup token');
    let minted: Response | null = null;
    for (const setupToken of new Set(tokens)) {
      minted = await fetch(`${base}/api/v1/setup`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ setupToken }),
      });
      if (minted.status === 201) break;
    }
    assert.equal(minted?.status, 201);
    const token = ((await minted!.json()) as { data: { token: string } }).data.token;
    const r = await fetch(`${base}/api/v1/placements`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(r.status, 200);
    const view = (
      (await r.json()) as {
        data: { mode: string; workers: { name: string }[]; models: { name: string; placed: string[] }[] };
      }
    ).data;
    assert.equal(view.mode, 'round_robin');
    assert.deepEqual(
      view.workers.map((w) => w.name),
      ['worker0', 'worker1', 'worker2'],
    );
    const mlp = view.models.find((m) => m.name === 'mlp');
    assert.deepEqual(mlp?.placed, ['worker0', 'worker1', 'worker2'], 'round robin: every holder serves');
    // Actions need lpt_packing: refused with the catalogue's FAILED_PRECONDITION.
    const act = await fetch(`${base}/api/v1/placements/mlp/add_replica`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(((await act.json()) as { code: string }).code, 'HLO_ERR_FAILED_PRECONDITION');
  });

  test('perf_analyzer through the one endpoint: zero errors, inline, shared memory and streaming', async () => {
    const common = [...grpcLoadArgs('mlp', server.grpcUrl(), 8), '--request-count', '1500'];
    for (const extra of [[], ['--shared-memory', 'system', '--output-shared-memory-size', '4096'], ['--streaming']]) {
      // perf_analyzer's own stall in this mode is made again; one with an answer owed is a failure.
      const r = await runPerfAnalyzerCounted([...common, ...extra], {
        inFlight: () => readMetric(server.ports.metrics, 'hloserve_gateway_inflight_requests'),
      });
      assert.equal(r.status, 0, r.output);
      assert.doesNotMatch(r.output, /error|failed/i);
      assert.ok(r.rows.get(8)!.throughput > 0, r.output);
    }
  });
});
