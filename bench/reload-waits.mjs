// bench/reload-waits: how long model A's threads wait for a CPU while model B reloads, by what held
// the CPU they were woken onto (issue 12). A figure that other processes on a loaded machine barely
// move, unlike A's p99: a wait behind one of our own SCHED_IDLE build threads is the cost of a
// reload, a wait behind another process is the machine's.
//
// Each run is bench/lifecycle.mjs's child (A = mlp at 2 closed-loop callers, B reloaded --cycles
// times) under `perf record` of the scheduler's switch and wake-up events, system-wide. For each
// wake-up, inside a reload window, of one of the child's threads that runs at normal policy (the
// JS thread, the serving pool, the PJRT client's threads), the wait is the time until that thread
// is switched in; it is counted against what was running on the CPU it was woken onto. Runs
// alternate the variants (--envs, as bench/lifecycle.mjs takes it) round by round.
//
// Usage (root, for perf): npm run build && node bench/reload-waits.mjs [--rounds 3] [--cycles 3]
//          [--concurrency 2] [--envs 'base:;short:HLOSERVE_BUILD_NUDGE_US=500']
// Each round also prints each CPU's time during the reloads by what ran on it.
import { spawn, spawnSync } from 'node:child_process';
import { createInterface } from 'node:readline';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fmt, machine, percentile } from './stats.mjs';
import { parseEnvVariants } from './env-variants.mjs';

const p99 = (xs) => percentile(Float64Array.from(xs).sort(), 99);

const arg = (name, dflt) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : dflt);
const rounds = Number(arg('--rounds', '3'));
const cycles = arg('--cycles', '3');
const concurrency = arg('--concurrency', '2');
const variants = parseEnvVariants(arg('--envs', 'base:'));
const lifecycle = join(fileURLToPath(new URL('.', import.meta.url)), 'lifecycle.mjs');
const dir = mkdtempSync(join(tmpdir(), 'hlo-reload-waits-'));

/** One traced child: {result (the child's JSON), waits: class -> [µs]}. */
async function traced(variant) {
  const data = join(dir, 'perf.data');
  const rec = spawnSync(
    'perf',
    [
      'record',
      '-q',
      '-k',
      'CLOCK_MONOTONIC',
      '-e',
      'sched:sched_switch',
      '-e',
      'sched:sched_wakeup',
      '-a',
      '-o',
      data,
      '--',
      process.execPath,
      '--expose-gc',
      lifecycle,
      '--child',
      '--cycles',
      cycles,
      '--concurrency',
      concurrency,
      '--reloads',
      '0',
    ],
    {
      env: { ...process.env, ...variant.env },
      encoding: 'utf8',
      maxBuffer: 1 << 26,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const line = rec.stdout.split('\n').find((l) => l.startsWith('{'));
  if (!line) throw new Error(`${variant.name}: no result: ${rec.stdout}${rec.stderr}`);
  const result = JSON.parse(line);
  // Streamed: on a loaded machine a system-wide trace runs past the longest string V8 holds.
  const script = spawn('perf', ['script', '-i', data, '--ns', '-F', 'cpu,time,event,trace'], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const { waits, share } = await waitsByHolder(createInterface({ input: script.stdout, crlfDelay: Infinity }), result);
  return { result, waits, share };
}

/**
 * Parses `perf script` lines into waits (µs) of the child's normal threads, keyed by holder class,
 * and each CPU's time during the reload windows by holder class (s; `share`): where the build ran
 * and who it shared its CPUs with.
 */
async function waitsByHolder(lines, result) {
  const policy = new Map(Object.entries(result.threads).map(([tid, p]) => [Number(tid), p]));
  const windows = result.windows.map(([a, b]) => [a / 1e9, b / 1e9]);
  const inWindow = (t) => windows.some(([a, b]) => t >= a && t <= b);
  const holder = (tid) => {
    if (tid === 0) return 'idle CPU';
    const p = policy.get(tid);
    if (p === undefined) return 'another process';
    return p === 5 || p === -19 ? 'our lowered thread' : p === 3 ? 'our nudge thread' : 'our normal thread';
  };
  const running = new Map(); // cpu -> tid
  const since = new Map(); // cpu -> when its current thread was switched in
  const pending = new Map(); // tid -> {t, cls}
  const waits = {};
  const share = {}; // cpu -> class -> s
  for await (const line of lines) {
    const m = /^\s*\[(\d+)\]\s+([\d.]+):\s+sched:(sched_switch|sched_wakeup):\s+(.*)$/.exec(line);
    if (!m) continue;
    const cpu = Number(m[1]);
    const t = Number(m[2]);
    if (m[3] === 'sched_switch') {
      const next = Number(/next_pid=(\d+)/.exec(m[4])[1]);
      if (since.has(cpu) && inWindow(t)) {
        const cls = holder(running.get(cpu) ?? 0);
        const c = (share[cpu] ??= {});
        c[cls] = (c[cls] ?? 0) + (t - since.get(cpu));
      }
      since.set(cpu, t);
      running.set(cpu, next);
      const w = pending.get(next);
      if (w) {
        pending.delete(next);
        (waits[w.cls] ??= []).push((t - w.t) * 1e6);
      }
    } else {
      const pid = Number(/pid=(\d+)/.exec(m[4])[1]);
      const target = Number(/target_cpu=(\d+)/.exec(m[4])[1]);
      if (policy.get(pid) !== 0 || !inWindow(t) || pending.has(pid)) continue;
      if ([...running.values()].includes(pid)) continue; // woken while still on a CPU: no wait
      pending.set(pid, { t, cls: holder(running.get(target) ?? 0) });
    }
  }
  return { waits, share };
}

console.log(`# bench/reload-waits - ${machine()}`);
console.log(
  `# waits of A's normal threads for a CPU during B's reloads, by what held that CPU (lowered: the build's SCHED_IDLE or nice-19 threads); ${cycles} reloads per run`,
);
const all = new Map(variants.map((v) => [v.name, []]));
for (let r = 1; r <= rounds; r++) {
  for (const v of r % 2 === 1 ? variants : [...variants].reverse()) {
    const { result, waits, share } = await traced(v);
    all.get(v.name).push({ result, waits });
    const reloadS = result.windows.reduce((s, [a, b]) => s + (b - a) / 1e9, 0);
    const idle = waits['our lowered thread'] ?? [];
    const over = (xs, us) => xs.filter((x) => x > us).length;
    const sum = (xs) => xs.reduce((s, x) => s + x, 0);
    console.log(
      `round ${r} ${v.name.padEnd(8)} reloads ${fmt(reloadS, 1)} s | behind our lowered: n ${idle.length}, p99 ${fmt(p99(idle))} us, >0.5 ms ${over(idle, 500)}, >1 ms ${over(idle, 1000)}, sum ${fmt(sum(idle) / 1e3 / reloadS, 1)} ms/s | ` +
        Object.entries(waits)
          .filter(([k]) => k !== 'our lowered thread')
          .map(([k, xs]) => `${k}: n ${xs.length} p99 ${fmt(p99(xs))} >0.5 ms ${over(xs, 500)}`)
          .join(', ') +
        ` | A during p50 ${fmt(result.during.p50)} p99 ${fmt(result.during.p99)}, alone p99 ${fmt(result.alone.p99)} us`,
    );
    const pct = (x) => `${fmt((100 * x) / reloadS, 0)} %`;
    console.log(
      `  CPU time during the reloads: ${Object.entries(share)
        .map(
          ([cpu, c]) =>
            `CPU ${cpu}: ${Object.entries(c)
              .map(([k, x]) => `${k} ${pct(x)}`)
              .join(', ')}`,
        )
        .join(' | ')}`,
    );
  }
}
for (const [name, runs] of all) {
  const idle = runs.flatMap((x) => x.waits['our lowered thread'] ?? []);
  const reloadS = runs.reduce((s, x) => s + x.result.windows.reduce((t, [a, b]) => t + (b - a) / 1e9, 0), 0);
  const sum = idle.reduce((s, x) => s + x, 0);
  console.log(
    `${name}: behind our lowered threads over ${runs.length} runs: n ${idle.length} (${fmt(idle.length / reloadS, 0)}/s of reload), p99 ${fmt(p99(idle))} us, max ${fmt(Math.max(0, ...idle))} us, >1 ms ${idle.filter((x) => x > 1000).length}, waited ${fmt(sum / 1e3 / reloadS, 1)} ms per s of reload`,
  );
}
rmSync(dir, { recursive: true, force: true });
