import { type ChildProcess, spawn } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { runCaptured } from './run-captured.js';
import { SERVER_NODE_FLAGS } from '@hloserve/engine/node-flags';

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const examplesDir = join(repoRoot, 'examples', 'models');
export const pythonDir = join(repoRoot, 'e2e', 'python');

export interface Ports {
  grpc: number;
  http: number;
  metrics: number;
  console: number;
}

export interface ServerProcess {
  readonly child: ChildProcess;
  readonly ports: Ports;
  readonly logs: string[];
  readonly exited: Promise<number | null>;
  grpcUrl(): string;
  httpUrl(): string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Starts `hloserve serve` as a child process on free ports (every port 0) and resolves once it
 * logs that it is listening. `env` adds HLOSERVE_* overrides. `cli` is the bundled CLI, as
 * `hloserve` and `npm start` run it (scripts/bundle-engine.mjs), unless a test names another;
 * `nodeFlags` are the serving flags unless a benchmark compares others.
 */
export async function startServer(
  env: Record<string, string> = {},
  timeoutMs = 120_000,
  args: readonly string[] = [],
  cli: string = join(repoRoot, 'engine', 'dist', 'bundle', 'cli.js'),
  nodeFlags: readonly string[] = SERVER_NODE_FLAGS,
): Promise<ServerProcess> {
  const child = spawn(
    process.execPath,
    [...nodeFlags, cli, 'serve', '--config', join(repoRoot, 'examples', 'node.yaml'), ...args],
    {
      env: {
        ...process.env,
        HLOSERVE_ENDPOINTS_GRPC_PORT: '0',
        HLOSERVE_ENDPOINTS_HTTP_PORT: '0',
        HLOSERVE_ENDPOINTS_METRICS_PORT: '0',
        HLOSERVE_ENDPOINTS_CONSOLE_PORT: '0',
        TF_CPP_MIN_LOG_LEVEL: '2',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const logs: string[] = [];
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const ports = await new Promise<Ports>((resolve_, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`server did not start in ${timeoutMs} ms:\n${logs.join('\n')}`)),
      timeoutMs,
    );
    for (const stream of [child.stdout!, child.stderr!]) {
      createInterface({ input: stream }).on('line', (line) => {
        logs.push(line);
        if (!line.startsWith('{')) return;
        try {
          const rec = JSON.parse(line) as { msg?: string } & Partial<Ports>;
          if (rec.msg === 'listening') {
            clearTimeout(timer);
            resolve_({ grpc: rec.grpc!, http: rec.http!, metrics: rec.metrics!, console: rec.console! });
          }
        } catch {
          /* not a log record */
        }
      });
    }
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before listening:\n${logs.join('\n')}`));
    });
  });
  return {
    child,
    ports,
    logs,
    exited,
    grpcUrl: () => `127.0.0.1:${ports.grpc}`,
    httpUrl: () => `127.0.0.1:${ports.http}`,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null) child.kill(signal);
      return exited;
    },
  };
}

/**
 * The Python the tests drive tritonclient with: the project-local environment scripts/setup-tests.mjs
 * builds (npm test passes it as $PYTHON), else the one on PATH.
 */
export function testPython(): string {
  return process.env.PYTHON ?? 'python3';
}

/** Runs a script of e2e/python and parses the JSON it prints last. Fails loudly without tritonclient. */
export async function runPython<T>(script: string, args: readonly string[], timeoutMs = 300_000): Promise<T> {
  const python = testPython();
  // A Python that cannot start at all (not found) fails with the same advice as one without the client.
  const probe = await runCaptured(python, ['-c', 'import tritonclient.grpc, tritonclient.http, numpy'], {
    timeoutMs: 60_000,
  }).catch((err: Error) => ({ status: null, stderr: err.message }));
  if (probe.status !== 0) {
    throw new Error(
      `the e2e tests need Triton's Python client: run them with npm test (scripts/setup-tests.mjs sets it up)\n${probe.stderr}`,
    );
  }
  const r = await runCaptured(python, [join(pythonDir, script), ...args], { timeoutMs, cwd: pythonDir });
  if (r.status !== 0) throw new Error(`${script} exited ${r.status}:\n${r.stderr}\n${r.stdout}`);
  const last = r.stdout.trim().split('\n').pop() ?? '';
  return JSON.parse(last) as T;
}

/** One unlabelled gauge or counter from a metrics port (Prometheus text), NaN when it is absent. */
export async function readMetric(metricsPort: number, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? NaN : Number(line.slice(name.length + 1));
}
