// Starts the real engine for the console specs and bench: `hloserve serve` on the CPU plugin,
// every port 0, the example models, and a fresh cache_dir (so a fresh operations database and a
// first-run setup token). Resolves once the engine logs that it is listening.
// HLOSERVE_E2E_ENGINE_ROOT runs another built checkout's engine (e.g. a branch with newer routes).
/* global fetch */
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { clearTimeout, setTimeout } from 'node:timers';
import { fileURLToPath } from 'node:url';
const repoRoot = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..');
const engineRoot = resolve(process.env.HLOSERVE_E2E_ENGINE_ROOT ?? repoRoot);
/**
 * The model repository is a copy of examples/models in the engine's directory, so uploads and
 * edits never touch the checkout.
 * @param {{ timeoutMs?: number, dir?: string, consolePort?: number, env?: Record<string, string>, args?: string[] }} [o]
 *   a `dir` and `consolePort` from a previous start restart the same engine: same database, same
 *   address; `env` adds HLOSERVE_* overrides (e.g. HLOSERVE_MODEL_CONTROL_MODE).
 * @returns {Promise<{ consoleUrl: string, consolePort: number, httpUrl: string, metricsUrl: string, grpcPort: number,
 *   pid: number, dir: string, logs: string[], stop: (o?: { keep?: boolean }) => Promise<void> }>}
 */
async function startEngine(o = {}) {
  const timeoutMs = o.timeoutMs ?? 180_000;
  const dir = o.dir ?? mkdtempSync(join(tmpdir(), 'hloserve-console-e2e-'));
  const config = join(dir, 'node.yaml');
  const models = join(dir, 'models');
  if (!existsSync(models)) cpSync(join(repoRoot, 'examples', 'models'), models, { recursive: true });
  writeFileSync(
    config,
    [
      `model_repo: ${JSON.stringify(models)}`,
      'global:',
      `  cache_dir: ${JSON.stringify(join(dir, 'cache'))}`,
      '  runtime:',
      '    plugin: cpu',
      '  endpoints:',
      '    host: 127.0.0.1',
      '',
    ].join('\n'),
  );
  const child = spawn(
    process.execPath,
    // `args` adds serve flags (e.g. --workers 2: the supervisor, with the gateway's console in front).
    [join(engineRoot, 'engine', 'dist', 'src', 'cli.js'), 'serve', '--config', config, ...(o.args ?? [])],
    {
      env: {
        ...process.env,
        HLOSERVE_ENDPOINTS_GRPC_PORT: '0',
        HLOSERVE_ENDPOINTS_HTTP_PORT: '0',
        HLOSERVE_ENDPOINTS_METRICS_PORT: '0',
        HLOSERVE_ENDPOINTS_CONSOLE_PORT: String(o.consolePort ?? 0),
        ...o.env,
        TF_CPP_MIN_LOG_LEVEL: '2',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const logs = [];
  const exited = new Promise((r) => child.once('exit', () => r()));
  // An engine that never listens is killed, and its directory (unless the caller's) goes with it.
  const ports = await new Promise((res, rej) => {
    const timer = setTimeout(
      () =>
        rej(
          new Error(`engine did not start in ${timeoutMs} ms:
${logs.join('\n')}`),
        ),
      timeoutMs,
    );
    for (const stream of [child.stdout, child.stderr]) {
      createInterface({ input: stream }).on('line', (line) => {
        logs.push(line);
        try {
          const rec = JSON.parse(line);
          if (rec.msg === 'listening' && typeof rec.console === 'number') {
            clearTimeout(timer);
            res({ console: rec.console, http: rec.http, grpc: rec.grpc, metrics: rec.metrics });
          }
        } catch {
          // not a log record
        }
      });
    }
    void exited.then(() =>
      rej(
        new Error(`engine exited before listening:
${logs.join('\n')}`),
      ),
    );
  }).catch(async (err) => {
    if (child.exitCode === null) child.kill('SIGKILL');
    await exited;
    if (!o.dir) rmSync(dir, { recursive: true, force: true });
    throw err;
  });
  return {
    consoleUrl: `http://127.0.0.1:${ports.console}`,
    consolePort: ports.console,
    httpUrl: `http://127.0.0.1:${ports.http}`,
    metricsUrl: `http://127.0.0.1:${ports.metrics}`,
    grpcPort: ports.grpc,
    pid: child.pid,
    dir,
    logs,
    stop: async ({ keep = false } = {}) => {
      if (child.exitCode === null) child.kill('SIGTERM');
      // A drain is bounded well under this: an engine still up after it has hung, and the spec
      // should fail at once with what the engine was doing, not at its own timeout with nothing.
      let timer;
      const stuck = new Promise((r) => (timer = setTimeout(() => r(true), STOP_BOUND_MS)));
      const hung = await Promise.race([exited.then(() => false), stuck]);
      clearTimeout(timer);
      if (hung) {
        const threads = threadStates(child.pid);
        child.kill('SIGKILL');
        await exited;
        throw new Error(
          `engine ${child.pid} did not exit within ${STOP_BOUND_MS} ms of SIGTERM; its threads:
${threads}
its last log lines:
${logs.slice(-40).join('\n')}`,
        );
      }
      if (!keep) rmSync(dir, { recursive: true, force: true });
    },
  };
}
const STOP_BOUND_MS = 60_000;

/**
 * Each thread of `pid` as `name state wchan` (Linux /proc), for a process that would not stop.
 * @param {number} pid
 * @returns {string}
 */
function threadStates(pid) {
  try {
    return readdirSync(`/proc/${pid}/task`)
      .map((tid) => {
        const read = (f) => {
          try {
            return readFileSync(`/proc/${pid}/task/${tid}/${f}`, 'utf8').trim();
          } catch {
            return '?';
          }
        };
        const stat = read('stat');
        const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
        return `  ${tid} ${read('comm')} ${state} ${read('wchan')}`;
      })
      .join('\n');
  } catch (err) {
    return `  (unreadable: ${err.message})`;
  }
}

/**
 * The one-time setup token, from the `#setup=` link or the setupToken field the engine logs at first start.
 * @param {readonly string[]} logs
 * @returns {string | null}
 */
function setupTokenFromLogs(logs) {
  for (const line of logs) {
    const m = /#setup=([A-Za-z0-9._~-]+)/.exec(line) ?? /"setupToken"\s*:\s*"([^"]+)"/.exec(line);
    if (m) return decodeURIComponent(m[1]);
  }
  return null;
}
/** The example bundles the engine serves: the rows the console's models table starts with. */
const exampleModels = readdirSync(join(repoRoot, 'examples', 'models')).filter((m) =>
  existsSync(join(repoRoot, 'examples', 'models', m, 'manifest.yaml')),
);

export { exampleModels, setupTokenFromLogs, startEngine };

/**
 * Exchanges the engine's one-time setup token (from its first-start log) for an admin token.
 * @param {{ consoleUrl: string, logs: string[] }} engine
 * @returns {Promise<string>}
 */
async function adminToken(engine) {
  const r = await fetch(`${engine.consoleUrl}/api/v1/setup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ setupToken: setupTokenFromLogs(engine.logs) }),
  });
  if (!r.ok) throw new Error(`setup: ${r.status} ${await r.text()}`);
  return (await r.json()).data.token;
}

export { adminToken };
