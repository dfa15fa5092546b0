import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { runPerfAnalyzerCounted } from '../src/perf-analyzer.js';

// perf_analyzer's stall in --request-count mode, injected: a stand-in that stalls on its first run
// (it sleeps, never printing its summary) and answers on the next, counting its runs.
function standIn(t: { after: (f: () => void) => void }): { runs: () => number } {
  const dir = mkdtempSync(join(tmpdir(), 'hlo-pa-stall-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const count = join(dir, 'runs');
  writeFileSync(count, '');
  const bin = join(dir, 'perf_analyzer');
  writeFileSync(
    bin,
    [
      '#!/bin/sh',
      `echo run >> '${count}'`,
      `[ "$(wc -l < '${count}')" -eq 1 ] && exec sleep 60`,
      'printf "Request concurrency: 4\\n  Throughput: 1000 infer/sec\\n  p50 latency: 900 usec\\n  p99 latency: 2000 usec\\n"',
      '',
    ].join('\n'),
  );
  chmodSync(bin, 0o755);
  const saved = [process.env.HLOSERVE_PERF_ANALYZER, process.env.HLOSERVE_PERF_ANALYZER_LD_PATH];
  process.env.HLOSERVE_PERF_ANALYZER = bin;
  process.env.HLOSERVE_PERF_ANALYZER_LD_PATH = dir;
  t.after(() => {
    const restore = (k: string, v: string | undefined) =>
      v === undefined ? delete process.env[k] : (process.env[k] = v);
    restore('HLOSERVE_PERF_ANALYZER', saved[0]);
    restore('HLOSERVE_PERF_ANALYZER_LD_PATH', saved[1]);
  });
  return { runs: () => readFileSync(count, 'utf8').split('\n').filter(Boolean).length };
}

test('a stalled --request-count run with nothing in flight at the server is made again', async (t) => {
  const pa = standIn(t);
  const stalls: (number | null)[] = [];
  const r = await runPerfAnalyzerCounted([], { stallMs: 300, inFlight: async () => 0, onStall: (n) => stalls.push(n) });
  assert.equal(r.status, 0, r.output);
  assert.equal(r.rows.get(4)?.throughput, 1000);
  assert.deepEqual(stalls, [0]);
  assert.equal(pa.runs(), 2);
});

test("a stall with requests still in flight is the server's: returned as it is, not made again", async (t) => {
  const pa = standIn(t);
  const r = await runPerfAnalyzerCounted([], { stallMs: 300, inFlight: async () => 3 });
  assert.equal(r.status, null);
  assert.match(r.output, /stalled with 3 requests in flight at the server/);
  assert.equal(pa.runs(), 1);
});

test('an unreadable in-flight count (NaN) is not taken for an idle server', async (t) => {
  const pa = standIn(t);
  const r = await runPerfAnalyzerCounted([], { stallMs: 300, inFlight: async () => NaN });
  assert.equal(r.status, null);
  assert.equal(pa.runs(), 1);
});
