// The XLA CPU client's two modes (global.runtime.cpu_asynchronous) side by side, for one or more
// checkouts: each round starts every (checkout, mode) pair fresh, in a rotated order, on the
// server's core, as bench/peers/run.mjs starts hloserve (a 200 ms warm-up at 16 callers, then a
// point at 1 and at 16 callers with perf_analyzer on the other core). Besides throughput and
// latency it prints, per request, the server's CPU time (user and system), its minor page faults
// and its thread sleeps: a mode that maps and zeroes an execution's scratch afresh shows up there
// even on a machine too loaded for its throughput to say anything.
//   node bench/cpu-modes.mjs [--model resnet|mlp] [--rounds 2] [--seconds 3] [--modes false,true] [CHECKOUT...]
// (default checkout: this one; HLOSERVE_PERF_ANALYZER(_LD_PATH) as for bench/peers)
import { readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { machine } from './stats.mjs';
import { modelSpec } from './peers/model-spec.mjs';
import { flag, median, perf, removeTmp, root, startHloserve, TICK_US, treeSleeps } from './peers/pinned.mjs';

const model = flag('--model', 'resnet');
const rounds = Number(flag('--rounds', '2'));
const seconds = Number(flag('--seconds', '3'));
const modes = flag('--modes', 'false,true').split(',');
const valued = new Set(['--model', '--rounds', '--seconds', '--modes', '--server-cpu', '--generator-cpu']);
const checkouts = process.argv
  .slice(2)
  .filter((a, i, all) => !a.startsWith('--') && !valued.has(all[i - 1]))
  .map((c) => resolve(c));
if (checkouts.length === 0) checkouts.push(root);
const spec = await modelSpec(root, model);

/** User and system ticks and minor faults of the server process (all its threads). */
function usage(pid) {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return {
    minflt: Number(f[7]),
    utime: Number(f[11]),
    stime: Number(f[12]),
    threads: readdirSync(`/proc/${pid}/task`).length,
  };
}

async function point(s, c) {
  const pid = s.proc.p.pid;
  const u0 = usage(pid);
  const sl0 = treeSleeps(pid);
  const row = await perf(s.url, c, Math.round((seconds * 1000) / 3), spec);
  const u1 = usage(pid);
  const n = row.count;
  return {
    ...row,
    userUs: ((u1.utime - u0.utime) * TICK_US) / n,
    sysUs: ((u1.stime - u0.stime) * TICK_US) / n,
    faults: (u1.minflt - u0.minflt) / n,
    sleeps: (treeSleeps(pid) - sl0) / n,
  };
}

const configs = checkouts.flatMap((checkout) => modes.map((mode) => ({ checkout, mode })));
const label = (cfg) => `${cfg.checkout === root ? '.' : cfg.checkout} async=${cfg.mode}`;
const results = new Map(configs.map((cfg) => [label(cfg), { 1: [], 16: [] }]));
console.log(
  `# bench/cpu-modes, model ${model}, machine: ${machine()}; ${rounds} round(s), ~${seconds} s per point; load ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`,
);
try {
  for (let k = 0; k < rounds; k++) {
    for (let j = 0; j < configs.length; j++) {
      const cfg = configs[(j + k) % configs.length];
      process.env.HLOSERVE_RUNTIME_CPU_ASYNCHRONOUS = cfg.mode;
      const s = { ...(await startHloserve(cfg.checkout, model)), spec };
      try {
        await perf(s.url, 16, 200, spec);
        for (const c of [1, 16]) {
          const r = await point(s, c);
          results.get(label(cfg))[c].push(r);
          console.log(
            `round ${k + 1} ${label(cfg)} c=${c}: ${r.rps.toFixed(0)} infer/s, p50 ${r.p50} p99 ${r.p99} µs, CPU ${(r.userUs + r.sysUs).toFixed(0)} µs/req (sys ${r.sysUs.toFixed(0)}), ${r.faults.toFixed(1)} faults/req, ${r.sleeps.toFixed(2)} sleeps/req`,
          );
        }
      } finally {
        await s.proc.stop();
      }
    }
  }
} finally {
  removeTmp();
}
console.log(
  '\n| build, mode | callers | infer/s (median; each round) | p50 µs | p99 µs | CPU µs/req (sys) | minor faults/req | sleeps/req |',
);
console.log('|---|---|---|---|---|---|---|---|');
for (const c of [1, 16])
  for (const [name, byC] of results) {
    const rs = byC[c];
    const m = (f) => median(rs.map(f));
    console.log(
      `| ${name} | ${c} | ${m((r) => r.rps).toFixed(0)} (${rs.map((r) => r.rps.toFixed(0)).join(', ')}) | ${m((r) => r.p50)} | ${m((r) => r.p99)} | ${m((r) => r.userUs + r.sysUs).toFixed(0)} (${m((r) => r.sysUs).toFixed(0)}) | ${m((r) => r.faults).toFixed(1)} | ${m((r) => r.sleeps).toFixed(2)} |`,
    );
  }
