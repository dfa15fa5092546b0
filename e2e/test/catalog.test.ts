import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, suite, test } from 'node:test';
import { metricByModel, simulateLru, writeCatalog, type CatalogModel } from '../src/catalog.js';
import { Fp32Client } from '../src/grpc-infer.js';
import { startServer, type ServerProcess } from '../src/server-process.js';

const COUNT = 24;
const INPUTS = 256;

function rng(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return s / 2147483648;
  };
}

function maxRelError(got: Float32Array, want: Float64Array): number {
  let scale = 1e-6;
  for (const v of want) scale = Math.max(scale, Math.abs(v));
  let worst = 0;
  want.forEach((v, i) => (worst = Math.max(worst, Math.abs(got[i]! - v) / scale)));
  return worst;
}

suite('a catalog four times the weight budget: every output right, loads and evictions follow LRU', () => {
  const repo = mkdtempSync(join(tmpdir(), 'hlo-catalog-'));
  let models: CatalogModel[];
  let budget: number;
  let server: ServerProcess;
  let client: Fp32Client;
  const metrics = async () => (await fetch(`http://127.0.0.1:${server.ports.metrics}/metrics`)).text();

  before(async () => {
    models = writeCatalog(repo, COUNT);
    budget = Math.floor(models.reduce((s, m) => s + m.weightBytes, 0) / 4);
    server = await startServer({ HLOSERVE_MODEL_REPO: repo, HLOSERVE_RUNTIME_WEIGHT_CACHE_BYTES: String(budget) });
    client = new Fp32Client(server.grpcUrl());
  });
  after(async () => {
    client.close();
    assert.equal(await server.stop(), 0);
    rmSync(repo, { recursive: true, force: true });
  });

  test('sequential random traffic: outputs match float64 and the metrics match an LRU simulation', async () => {
    const sizes = new Map(models.map((m) => [m.name, m.weightBytes]));
    const byName = new Map(models.map((m) => [m.name, m]));
    // Models load side by side at startup, so the LRU's order after it is not known; one request
    // to every model in name order gives it a known order (touching every model in turn leaves
    // resident the longest run of the last ones that fits, whatever came before).
    const startup = models.map((m) => m.name);
    for (const name of startup) await client.infer(name, 'x', [1, INPUTS], new Float32Array(INPUTS));
    const before = await metrics();
    const loads0 = metricByModel(before, 'hloserve_weight_loads_total');
    const evictions0 = metricByModel(before, 'hloserve_weight_evictions_total');
    assert.deepEqual(
      [...simulateLru(sizes, budget, startup).loads.values()].reduce((a, b) => a + b, 0),
      COUNT,
    );

    const next = rng(7);
    const traffic: string[] = [];
    for (let k = 0; k < 150; k++) {
      const m = models[Math.floor(next() * COUNT)]!;
      traffic.push(m.name);
      const x = Float32Array.from({ length: INPUTS }, () => next() * 2 - 1);
      const y = await client.infer(m.name, 'x', [1, INPUTS], x);
      assert.ok(maxRelError(y, byName.get(m.name)!.reference(x)) < 1e-5, `${m.name} request ${k}`);
    }

    const text = await metrics();
    const loads = metricByModel(text, 'hloserve_weight_loads_total');
    const evictions = metricByModel(text, 'hloserve_weight_evictions_total');
    const all = simulateLru(sizes, budget, [...startup, ...traffic]);
    const warm = simulateLru(sizes, budget, startup);
    for (const m of models) {
      const wantLoads = (all.loads.get(m.name) ?? 0) - (warm.loads.get(m.name) ?? 0);
      const wantEvictions = (all.evictions.get(m.name) ?? 0) - (warm.evictions.get(m.name) ?? 0);
      assert.equal((loads.get(m.name) ?? 0) - (loads0.get(m.name) ?? 0), wantLoads, `${m.name} loads`);
      assert.equal((evictions.get(m.name) ?? 0) - (evictions0.get(m.name) ?? 0), wantEvictions, `${m.name} evictions`);
    }
    const totalLoads = [...all.loads.values()].reduce((a, b) => a + b, 0) - COUNT;
    assert.ok(totalLoads > 50, `the budget should force reloads (got ${totalLoads})`);
    const resident = Number(/^hloserve_weight_resident_bytes (\d+)/m.exec(text)?.[1]);
    assert.ok(resident <= budget, `resident ${resident} > budget ${budget}`);
  });

  test('concurrent random traffic (200 requests, 8 in flight): no failures, every output right', async () => {
    const next = rng(11);
    const jobs = Array.from({ length: 200 }, () => {
      const m = models[Math.floor(next() * COUNT)]!;
      const rows = [1, 2, 3][Math.floor(next() * 3)]!;
      const x = Float32Array.from({ length: rows * INPUTS }, () => next() * 2 - 1);
      return { m, rows, x };
    });
    let at = 0;
    const worker = async () => {
      while (at < jobs.length) {
        const { m, rows, x } = jobs[at++]!;
        const y = await client.infer(m.name, 'x', [rows, INPUTS], x);
        for (let r = 0; r < rows; r++) {
          const want = m.reference(x.subarray(r * INPUTS, (r + 1) * INPUTS));
          assert.ok(maxRelError(y.subarray(r * 8, (r + 1) * 8), want) < 1e-5, `${m.name} row ${r}`);
        }
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    const failures = metricByModel(await metrics(), 'nv_inference_request_failure');
    assert.equal(
      [...failures.values()].reduce((a, b) => a + b, 0),
      0,
    );
  });
});
