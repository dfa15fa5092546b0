import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { runCaptured } from './run-captured.js';
import { repoRoot } from './server-process.js';

/** One concurrency's summary line: throughput infer/s, p50 and p99 in µs. */
export interface PerfRow {
  throughput: number;
  p50: number;
  p99: number;
}

export interface PerfResult {
  status: number | null;
  output: string;
  /** concurrency -> its summary */
  rows: Map<number, PerfRow>;
}

/** Set by scripts/setup-tests.mjs (npm test); the fallback is where it unpacks the binary. */
export function perfAnalyzerBinary(): string {
  const bin =
    process.env.HLOSERVE_PERF_ANALYZER ?? join(repoRoot, '.cache', 'tools', 'perf_analyzer-2.47.0', 'perf_analyzer');
  if (!existsSync(bin))
    throw new Error(`perf_analyzer is not installed: run 'node scripts/setup-tests.mjs perf-analyzer'`);
  return bin;
}

/**
 * The environment perf_analyzer runs in: libb64 and libcudart.so.12, unpacked by the set-up step
 * (perf_analyzer never needs a GPU here), ahead of the caller's library path.
 */
export function perfAnalyzerEnv(): NodeJS.ProcessEnv {
  const lib = process.env.HLOSERVE_PERF_ANALYZER_LD_PATH;
  if (!lib)
    throw new Error(
      "perf_analyzer's libraries are not set up: run the tests with npm test, or export what 'node scripts/setup-tests.mjs perf-analyzer' prints",
    );
  return { ...process.env, LD_LIBRARY_PATH: [lib, process.env.LD_LIBRARY_PATH].filter(Boolean).join(':') };
}

/** The arguments every load here starts with: one model over gRPC at one concurrency. */
export function grpcLoadArgs(model: string, url: string, concurrency: number): string[] {
  return ['-m', model, '-u', url, '-i', 'grpc', '--concurrency-range', String(concurrency)];
}

/** The per-concurrency summary blocks of perf_analyzer's output. */
export function parsePerfSummary(output: string): Map<number, PerfRow> {
  const rows = new Map<number, PerfRow>();
  for (const block of output.split('Request concurrency: ').slice(1)) {
    const c = Number(block.split('\n')[0]);
    const num = (re: RegExp): number => Number(re.exec(block)?.[1] ?? NaN);
    rows.set(c, {
      throughput: num(/Throughput: ([\d.]+) infer\/sec/),
      p50: num(/p50 latency: (\d+) usec/),
      p99: num(/p99 latency: (\d+) usec/),
    });
  }
  return rows;
}

/** Runs Triton's perf_analyzer and parses its per-concurrency summary. */
export async function runPerfAnalyzer(args: readonly string[], timeoutMs = 300_000): Promise<PerfResult> {
  const r = await runCaptured(perfAnalyzerBinary(), args, { timeoutMs, env: perfAnalyzerEnv() });
  const output = `${r.stdout}${r.stderr}`;
  return { status: r.status, output, rows: parsePerfSummary(output) };
}

export interface CountedOptions {
  /** How long a run may take before it counts as stalled. */
  stallMs?: number;
  /** How many stalled runs are made again. */
  retries?: number;
  /**
   * The server's requests in flight, read after a stall: 0 says the stall was perf_analyzer's own
   * and the run is made again; anything else (more, or NaN: unread) returns the killed run (status
   * null) as it is. Without it every stall is made again.
   */
  inFlight?: () => Promise<number>;
  /** Told of each stall made again. */
  onStall?: (inFlight: number | null) => void;
}

/**
 * perf_analyzer with --request-count. In that mode it now and then never returns after its last
 * answer: its worker threads gone, its main thread asleep in its measurement loop, the server
 * with nothing in flight (bench/RESULTS.md, session 15; once in a CI run through the gateway). A
 * test must tell that from a server that lost an answer, which `inFlight` does.
 */
export async function runPerfAnalyzerCounted(args: readonly string[], o: CountedOptions = {}): Promise<PerfResult> {
  const { stallMs = 120_000, retries = 2 } = o;
  for (let attempt = 0; ; attempt++) {
    const r = await runPerfAnalyzer(args, stallMs);
    if (r.status !== null || attempt === retries) return r;
    const inFlight = o.inFlight ? await o.inFlight() : null;
    if (inFlight !== null && inFlight !== 0)
      return { ...r, output: `${r.output}\nperf_analyzer stalled with ${inFlight} requests in flight at the server` };
    o.onStall?.(inFlight);
  }
}
