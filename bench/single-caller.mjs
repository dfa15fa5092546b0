// bench/single-caller: hloserve's own time on one caller's request (issue 18, item 2), for one or
// more checkouts side by side (before/after a change, in one run).
//
// own time = hloserve's p50 at concurrency 1 - the canned server's p50 (what perf_analyzer and the
// transport cost alone, bench/peers/canned.mjs) - the addon's direct execute p50 (the same program
// run() after run() in a bare process, bench/peers/direct-execute.mjs, from the same checkout).
// The canned floor is measured on two transports each round: grpc-js (the floor of the figures
// before session 11) and the HTTP/2 frame layer hloserve's port itself uses since (a cheaper
// floor, so own time against it is the larger, fairer figure).
// Everything under test runs on cpu 0 (taskset) and perf_analyzer on cpu 1. Each round measures the
// canned floor once, then every checkout in turn (the order rotates): its direct execute, then its
// server at concurrency 1 and 16, with the server's CPU time per request from /proc and its
// threads' sleeps per request (each a wake-up: the thread hops, which load does not change). "served
// execute" is the server's own statistics' compute time per request (perf_analyzer's "compute
// infer"), against the direct execute's mean.
//
//   npm run build && node bench/single-caller.mjs [CHECKOUT ...] [--rounds 3] [--seconds 3]
//   (CHECKOUT defaults to this one; each needs its dist and native build; perf_analyzer from
//   HLOSERVE_PERF_ANALYZER / HLOSERVE_PERF_ANALYZER_LD_PATH)
import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { machine } from './stats.mjs';
import {
  flag,
  generatorCpu,
  here,
  measure,
  median,
  perf,
  removeTmp,
  root,
  serverCpu,
  spread,
  startCanned,
  startHloserve,
} from './peers/pinned.mjs';

const valued = new Set(['--rounds', '--seconds', '--server-cpu', '--generator-cpu']);
const positional = process.argv.slice(2).filter((a, i, all) => !a.startsWith('--') && !valued.has(all[i - 1]));
const checkouts = (positional.length > 0 ? positional : [root]).map((r) => resolve(r));
const rounds = Number(flag('--rounds', '3'));
const seconds = Number(flag('--seconds', '3'));

function direct(checkout) {
  const r = spawnSync(
    'taskset',
    ['-c', serverCpu, process.execPath, join(here, 'direct-execute.mjs'), checkout, '3000'],
    { encoding: 'utf8', cwd: checkout, env: { ...process.env, TF_CPP_MIN_LOG_LEVEL: '2' } },
  );
  const line = r.stdout.trim().split('\n').pop();
  if (r.status !== 0 || !line?.startsWith('{')) throw new Error(`direct-execute failed:\n${r.stdout}${r.stderr}`);
  return JSON.parse(line);
}

console.log(
  `# bench/single-caller, machine: ${machine()}; server on cpu ${serverCpu}, perf_analyzer on cpu ${generatorCpu}; ~${seconds} s per point, ${rounds} round(s)`,
);
const floor = [];
const framesFloor = [];
const rows = new Map(checkouts.map((c) => [c, []]));
const t0 = performance.now();
try {
  for (let k = 0; k < rounds; k++) {
    for (const [transport, into] of [
      ['grpc-js', floor],
      ['frames', framesFloor],
    ]) {
      const canned = await startCanned('mlp', transport);
      try {
        await perf(canned.url, 4, 200);
        into.push(await measure(canned, 1, seconds));
      } finally {
        await canned.proc.stop();
      }
    }
    for (let j = 0; j < checkouts.length; j++) {
      const checkout = checkouts[(j + k) % checkouts.length];
      const d = direct(checkout);
      const s = await startHloserve(checkout);
      try {
        await perf(s.url, 16, 200); // warm-up
        const c1 = await measure(s, 1, seconds);
        const c16 = await measure(s, 16, seconds);
        rows.get(checkout).push({ round: k, direct: d, c1, c16 });
      } catch (err) {
        console.error(`hloserve from ${checkout} failed; its log ends:\n${s.proc.logs().slice(-3000)}`);
        throw err;
      } finally {
        await s.proc.stop();
      }
    }
  }
} finally {
  removeTmp();
}

const f = (x, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : String(x));
console.log(`\n(${((performance.now() - t0) / 1000).toFixed(0)} s in all)`);
console.log(
  `canned floor p50 at c=1 per round: grpc-js ${floor.map((r) => r.p50).join(' ')} µs (median ${median(floor.map((r) => r.p50))}); frames ${framesFloor.map((r) => r.p50).join(' ')} µs (median ${median(framesFloor.map((r) => r.p50))})\n`,
);
console.log(
  '| checkout | direct execute p50 / mean µs | c=1 infer/s | c=1 p50 µs | c=1 p99 µs | own time µs: median (each round) | own time over the frames floor µs | served execute µs (÷ direct mean) | CPU µs/req c=1 | c=16 | c=1 ÷ c=16 | thread sleeps/req c=1 | c=16 infer/s |',
);
console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|');
for (const c of checkouts) {
  const rs = rows.get(c);
  const own = rs.map((r) => r.c1.p50 - floor[r.round].p50 - r.direct.p50);
  const ownFrames = rs.map((r) => r.c1.p50 - framesFloor[r.round].p50 - r.direct.p50);
  const served = median(rs.map((r) => r.c1.serverInfer));
  const dmean = median(rs.map((r) => r.direct.mean ?? r.direct.p50));
  const cpu1 = median(rs.map((r) => r.c1.cpuUs));
  const cpu16 = median(rs.map((r) => r.c16.cpuUs));
  console.log(
    `| ${c} | ${f(median(rs.map((r) => r.direct.p50)))} / ${f(dmean)} | ${f(median(rs.map((r) => r.c1.rps)))} | ${median(rs.map((r) => r.c1.p50))} | ${median(rs.map((r) => r.c1.p99))} | ${f(median(own))} (${own.map((x) => f(x)).join(' ')}) | ${f(median(ownFrames))} (${ownFrames.map((x) => f(x)).join(' ')}) | ${served} (${f(served / dmean, 2)}) | ${f(cpu1)} | ${f(cpu16)} | ${f(median(rs.map((r) => r.c1.cpuUs / r.c16.cpuUs)), 2)} | ${f(median(rs.map((r) => r.c1.sleepsPerRequest)), 2)} | ${f(median(rs.map((r) => r.c16.rps)))} |`,
  );
}
if (checkouts.length > 1) {
  const [base, ...others] = checkouts;
  for (const o of others) {
    const p50 = rows.get(o).map((r, i) => r.c1.p50 / rows.get(base)[i].c1.p50);
    const cpu = rows.get(o).map((r, i) => r.c1.cpuUs / rows.get(base)[i].c1.cpuUs);
    const tput16 = rows.get(o).map((r, i) => r.c16.rps / rows.get(base)[i].c16.rps);
    console.log(
      `\n${o} ÷ ${base}, per round: c=1 p50 ${p50.map((x) => x.toFixed(2)).join(' ')} (median ${median(p50).toFixed(2)}, ${spread(p50)}); c=1 CPU/req ${cpu.map((x) => x.toFixed(2)).join(' ')}; c=16 infer/s ${tput16.map((x) => x.toFixed(2)).join(' ')}`,
    );
  }
}
