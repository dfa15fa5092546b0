import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from './server-process.js';

export interface PerfResult {
  status: number | null;
  output: string;
  /** concurrency -> { throughput infer/s, p50 µs, p99 µs } */
  rows: Map<number, { throughput: number; p50: number; p99: number }>;
}

/** Set by scripts/setup-tests.mjs (npm test); the fallback is where it unpacks the binary. */
export function perfAnalyzerBinary(): string {
  const bin =
    process.env.HLOSERVE_PERF_ANALYZER ?? join(repoRoot, '.cache', 'tools', 'perf_analyzer-2.47.0', 'perf_analyzer');
  if (!existsSync(bin))
    throw new Error(`perf_analyzer is not installed: run 'node scripts/setup-tests.mjs perf-analyzer'`);
  return bin;
}

/** Runs Triton's perf_analyzer and parses its per-concurrency summary. */
export function runPerfAnalyzer(args: readonly string[], timeoutMs = 300_000): PerfResult {
  // libb64 and libcudart.so.12, unpacked by the set-up step (perf_analyzer never needs a GPU here).
  const lib = process.env.HLOSERVE_PERF_ANALYZER_LD_PATH;
  if (!lib) throw new Error("perf_analyzer's libraries are not set up: run the tests with npm test");
  const r = spawnSync(perfAnalyzerBinary(), args, {
    encoding: 'utf8',
    timeout: timeoutMs,
    env: { ...process.env, LD_LIBRARY_PATH: [lib, process.env.LD_LIBRARY_PATH].filter(Boolean).join(':') },
  });
  const output = `${r.stdout ?? ''}${r.stderr ?? ''}`;
  const rows = new Map<number, { throughput: number; p50: number; p99: number }>();
  for (const block of output.split('Request concurrency: ').slice(1)) {
    const c = Number(block.split('\n')[0]);
    const num = (re: RegExp) => Number(re.exec(block)?.[1] ?? NaN);
    rows.set(c, {
      throughput: num(/Throughput: ([\d.]+) infer\/sec/),
      p50: num(/p50 latency: (\d+) usec/),
      p99: num(/p99 latency: (\d+) usec/),
    });
  }
  return { status: r.status, output, rows };
}
