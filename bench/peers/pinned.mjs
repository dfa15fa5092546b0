// Shared by bench/peers/run.mjs and bench/single-caller.mjs: a server under test pinned to one core
// (taskset), Triton's perf_analyzer pinned to another, and the server's CPU time from /proc.
import { spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { InferenceClient } from '../../client/dist/src/index.js';
import { grpcLoadArgs, perfAnalyzerBinary, perfAnalyzerEnv } from '../../e2e/dist/src/perf-analyzer.js';
import { shapeFlag } from './model-spec.mjs';

export const here = dirname(fileURLToPath(import.meta.url));
export const root = resolve(here, '..', '..');
export const TICK_US = 10_000; // /proc/<pid>/stat counts in 10 ms ticks (CLK_TCK 100)

export const flag = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i < 0 ? fallback : process.argv[i + 1];
};
export const serverCpu = flag('--server-cpu', '0');
export const generatorCpu = flag('--generator-cpu', '1');
/**
 * --shield: the server under test and perf_analyzer run SCHED_RR (chrt -r 1), so that other
 * processes on this shared 2-core VM (nice 0 or 10, SCHED_OTHER) cannot take their cores while they
 * have work: a diagnostic that measures the servers rather than the machine's load. It changes how
 * a server's own threads share its core (one runs until it blocks instead of being preempted on a
 * wake-up), so the figures it gives are labelled as shielded, never mixed with plain ones.
 */
export const shield = process.argv.includes('--shield');
/** `taskset -c CPU ...`, under SCHED_RR with --shield. */
export const pinnedArgv = (cpu, cmd, args) => [
  ...(shield ? ['chrt', '-r', '1'] : []),
  'taskset',
  '-c',
  cpu,
  cmd,
  ...args,
];
export const tmp = mkdtempSync(join(tmpdir(), 'hlo-pinned-'));
export const removeTmp = () => rmSync(tmp, { recursive: true, force: true });
let nextPort = 18000 + (process.pid % 1000) * 10;
export const port = () => nextPort++;

const paEnv = perfAnalyzerEnv();
const paBin = perfAnalyzerBinary();

/** Starts `cmd` on the server's core; its output goes to a file (no pipe the bench must drain). */
export function pinnedChild(name, cmd, args, opts = {}) {
  const log = join(tmp, `${name}-${nextPort}.log`);
  const fd = openSync(log, 'w');
  const [bin, ...argv] = pinnedArgv(serverCpu, cmd, args);
  const p = spawn(bin, argv, { stdio: ['ignore', fd, fd], ...opts });
  closeSync(fd);
  const exited = new Promise((r) => p.once('exit', r));
  return {
    p,
    logs: () => readFileSync(log, 'utf8'),
    stop: async () => (p.exitCode === null && p.kill('SIGTERM'), exited),
  };
}

/** The pids of a process and all its descendants. */
function tree(pid) {
  const stats = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const f = readFileSync(`/proc/${d}/stat`, 'utf8').split(') ')[1].split(' ');
      stats.push({ pid: Number(d), ppid: Number(f[1]), ticks: Number(f[11]) + Number(f[12]) });
    } catch {
      /* exited meanwhile */
    }
  }
  const inTree = new Set([pid]);
  for (let grew = true; grew;) {
    grew = false;
    for (const s of stats)
      if (!inTree.has(s.pid) && inTree.has(s.ppid)) {
        inTree.add(s.pid);
        grew = true;
      }
  }
  return stats.filter((s) => inTree.has(s.pid));
}

/** User + system CPU ticks of a process and all its descendants. */
export function treeTicks(pid) {
  return tree(pid).reduce((a, s) => a + s.ticks, 0);
}

/**
 * Times a thread of the process tree went to sleep (voluntary context switches, every thread):
 * each is a wake-up later, so per request it counts the thread hops a request costs, which unlike
 * latency a busy machine does not change.
 */
export function treeSleeps(pid) {
  let n = 0;
  for (const s of tree(pid)) {
    let tasks = [];
    try {
      tasks = readdirSync(`/proc/${s.pid}/task`);
    } catch {
      continue;
    }
    for (const t of tasks) {
      try {
        n += Number(
          /voluntary_ctxt_switches:\s+(\d+)/.exec(readFileSync(`/proc/${s.pid}/task/${t}/status`, 'utf8'))[1],
        );
      } catch {
        /* exited meanwhile */
      }
    }
  }
  return n;
}

export async function waitReady(url, proc, what, model = 'mlp') {
  const c = new InferenceClient({ url, retry: false, timeoutMs: 2000 });
  try {
    for (let i = 0; i < 240; i++) {
      if (proc.p.exitCode !== null) throw new Error(`${what} exited ${proc.p.exitCode}:\n${proc.logs()}`);
      const ok = await c
        .model(model)
        .ready()
        .catch(() => false);
      if (ok) return;
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`${what} not ready in 60 s:\n${proc.logs()}`);
  } finally {
    await c.close();
  }
}

/** The canned-answer server (canned.mjs): the floor the generator and the transport cost. */
export async function startCanned(model = 'mlp', transport = 'grpc-js') {
  const p = port();
  const proc = pinnedChild('canned', process.execPath, [join(here, 'canned.mjs'), String(p), model, transport], {
    cwd: root,
  });
  const url = `127.0.0.1:${p}`;
  await waitReady(url, proc, 'canned', model);
  return { url, proc };
}

/**
 * `hloserve serve` from the checkout at `checkout` (default this one), serving only `model`, on the
 * server's core, with that checkout's serving Node flags (a before/after may differ in them):
 * `nodeFlags` replace a default of the same name or add to them, `env` adds to the environment.
 */
export async function startHloserve(
  checkout = root,
  model = 'mlp',
  { nodeFlags = [], env = {}, name = 'hloserve' } = {},
) {
  const [grpc, http] = [port(), port()];
  const base = (await import(pathToFileURL(join(checkout, 'engine', 'dist', 'src', 'node-flags.js')).href))
    .SERVER_NODE_FLAGS;
  const given = new Set(nodeFlags.map((f) => f.split('=')[0]));
  const proc = pinnedChild(
    'hloserve',
    process.execPath,
    [
      ...base.filter((f) => !given.has(f.split('=')[0])),
      ...nodeFlags,
      join(checkout, 'engine', 'dist', 'src', 'cli.js'),
      'serve',
      '--config',
      join(checkout, 'examples', 'node.yaml'),
    ],
    {
      cwd: checkout,
      env: {
        ...process.env,
        HLOSERVE_MODELS_INCLUDE: model,
        HLOSERVE_ENDPOINTS_GRPC_PORT: String(grpc),
        HLOSERVE_ENDPOINTS_HTTP_PORT: String(http),
        HLOSERVE_ENDPOINTS_METRICS_PORT: '0',
        HLOSERVE_ENDPOINTS_CONSOLE_PORT: '0',
        TF_CPP_MIN_LOG_LEVEL: '2',
        ...env,
      },
    },
  );
  const url = `127.0.0.1:${grpc}`;
  try {
    await waitReady(url, proc, name, model);
  } catch (e) {
    await proc.stop();
    throw e;
  }
  return { url, http, proc };
}

/**
 * perf_analyzer on the generator's core, closed loop at concurrency `c` on the mlp, or on the
 * model of `spec` (model-spec.mjs) with --shape for each of its inputs: three time
 * windows of `windowMs` (a stability threshold of 1000 % accepts the first three, so a point lasts
 * a fixed time whatever the server's speed; --request-count is no use here, it reports at least
 * one second's worth of time however few requests it sends). `serverInfer` is the server's own
 * "compute infer" average (from its statistics), where it reports one.
 */
export function perf(url, c, windowMs, spec = null) {
  return new Promise((resolve_, reject) => {
    const [bin, ...argv] = pinnedArgv(generatorCpu, paBin, [
      ...grpcLoadArgs(spec?.name ?? 'mlp', url, c),
      ...(spec?.inputs.flatMap((t) => ['--shape', shapeFlag(t)]) ?? []),
      '--measurement-interval',
      String(windowMs),
      '--stability-percentage',
      '1000',
    ]);
    const p = spawn(bin, argv, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: paEnv,
    });
    let out = '';
    for (const s of [p.stdout, p.stderr]) s.on('data', (d) => (out += d));
    p.once('exit', (code) => {
      const num = (re) => Number(re.exec(out)?.[1] ?? NaN);
      const row = {
        count: num(/Request count: (\d+)/),
        rps: num(/Throughput: ([\d.]+) infer\/sec/),
        p50: num(/p50 latency: (\d+) usec/),
        p99: num(/p99 latency: (\d+) usec/),
        serverInfer: num(/compute infer (\d+) usec/),
      };
      if (code !== 0 || !Number.isFinite(row.rps)) reject(new Error(`perf_analyzer exited ${code}:\n${out}`));
      else resolve_(row);
    });
  });
}

/**
 * One point: perf_analyzer for about `seconds` on `s.spec`'s model (default the mlp), and the
 * server's CPU time and thread sleeps (treeSleeps) per request meanwhile.
 */
export async function measure(s, c, seconds) {
  const before = treeTicks(s.proc.p.pid);
  const sleeps = treeSleeps(s.proc.p.pid);
  const row = await perf(s.url, c, Math.round((seconds * 1000) / 3), s.spec);
  // The run's few requests outside the measured windows ride on `count`: close enough per request.
  const cpuUs = ((treeTicks(s.proc.p.pid) - before) * TICK_US) / row.count;
  const sleepsPerRequest = (treeSleeps(s.proc.p.pid) - sleeps) / row.count;
  return { ...row, cpuUs, sleepsPerRequest };
}

export const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
export const spread = (xs) => `${Math.min(...xs).toFixed(2)}-${Math.max(...xs).toFixed(2)}`;
