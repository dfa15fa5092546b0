// bench/tail: where hloserve's single-caller tail (p99, p99.9) comes from (issue 18: "at one caller
// ... p99 no worse than either peer's"). For one or more variants side by side, in alternating
// rounds: the canned-answer floor (bench/peers/canned.mjs, grpc-js and frames), then each variant's
// server (pinned to cpu 0, perf_analyzer on cpu 1, as bench/peers) at concurrency 1, its every
// request's latency from perf_analyzer's profile export (so p99.9 and a histogram, not only
// perf_analyzer's p50/p99), and at concurrency 16 (throughput: a setting must not cost it).
// With --trace-gc, each variant's server also runs with V8's --trace-gc and the bench counts its
// scavenges and their pauses per second of load at c=1. With --span, each server has
// bench/tail-span-probe.mjs preloaded, which splits every c=1 request at the server's socket into
// the server's span (request read to answer written) and the rest (kernel and client).
//
// A variant is CHECKOUT[@name][:K=V+K=V...] where a K starting with "--" is a node flag added to the
// serving flags (e.g. --max-semi-space-size=16) and any other K an environment variable.
//
//   npm run build && node bench/tail.mjs /work/wt/s13final@before .@after [--rounds 3] [--seconds 4] [--trace-gc]
//       [--no-c16] [--shield]   (--shield: server and perf_analyzer SCHED_RR, bench/peers/pinned.mjs)
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { machine } from './stats.mjs';
import {
  flag,
  generatorCpu,
  here,
  perf,
  pinnedArgv,
  port,
  removeTmp,
  serverCpu,
  shield,
  startCanned,
  startHloserve,
  tmp,
  treeTicks,
  TICK_US,
} from './peers/pinned.mjs';
import { spawn } from 'node:child_process';
import { grpcLoadArgs, perfAnalyzerBinary, perfAnalyzerEnv } from '../e2e/dist/src/perf-analyzer.js';

const valued = new Set(['--rounds', '--seconds', '--server-cpu', '--generator-cpu']);
const positional = process.argv.slice(2).filter((a, i, all) => !a.startsWith('--') && !valued.has(all[i - 1]));
const rounds = Number(flag('--rounds', '3'));
const seconds = Number(flag('--seconds', '4'));
const traceGc = process.argv.includes('--trace-gc');
const skip16 = process.argv.includes('--no-c16');
const span = process.argv.includes('--span');

const variants = (positional.length > 0 ? positional : ['.']).map((v) => {
  const [head, list = ''] = v.split(/:(.*)/s);
  const [dir, name] = head.split('@');
  const kvs = list
    .split('+')
    .filter(Boolean)
    .map((kv) => kv.split(/=(.*)/s));
  return {
    name: name ?? dir,
    checkout: resolve(dir),
    nodeFlags: kvs.filter(([k]) => k.startsWith('--')).map(([k, val]) => (val === undefined ? k : `${k}=${val}`)),
    env: Object.fromEntries(kvs.filter(([k]) => !k.startsWith('--'))),
  };
});

async function startServer(v) {
  const spanOut = join(tmp, `span-${port()}.json`);
  const nodeFlags = [
    ...v.nodeFlags,
    ...(traceGc ? ['--trace-gc'] : []),
    ...(span ? ['--import', join(here, '..', 'tail-span-probe.mjs')] : []),
  ];
  const env = { HLOSERVE_TAIL_SPAN_OUT: spanOut, ...v.env };
  return { ...(await startHloserve(v.checkout, 'mlp', { nodeFlags, env, name: `hloserve ${v.name}` })), spanOut };
}

const paBin = perfAnalyzerBinary();
const paEnv = perfAnalyzerEnv();

/** perf_analyzer at c=1 for `secs`, every request's latency (µs, sorted) from its profile export. */
function latencies(url, secs) {
  const file = join(tmp, `profile-${port()}.json`);
  return new Promise((res, rej) => {
    const [bin, ...argv] = pinnedArgv(generatorCpu, paBin, [
      ...grpcLoadArgs('mlp', url, 1),
      '--measurement-interval',
      String(Math.round((secs * 1000) / 3)),
      '--stability-percentage',
      '1000',
      '--profile-export-file',
      file,
    ]);
    const p = spawn(bin, argv, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: paEnv,
    });
    let out = '';
    for (const s of [p.stdout, p.stderr]) s.on('data', (d) => (out += d));
    p.once('exit', (code) => {
      if (code !== 0) return rej(new Error(`perf_analyzer exited ${code}:\n${out}`));
      const doc = JSON.parse(readFileSync(file, 'utf8'));
      const lat = [];
      let first = Infinity;
      let last = 0;
      for (const exp of doc.experiments)
        for (const r of exp.requests) {
          const t0 = Number(r.timestamp);
          const t1 = Number(r.response_timestamps.at(-1));
          lat.push((t1 - t0) / 1000);
          first = Math.min(first, t0);
          last = Math.max(last, t1);
        }
      lat.sort((a, b) => a - b);
      res({ lat, wallS: (last - first) / 1e9 });
    });
  });
}

/** The span probe's window (bench/tail-span-probe.mjs), each list sorted; it writes on the signal. */
async function readSpans(file) {
  for (let i = 0; i < 50; i++) {
    try {
      const { server, outside, blame, gcs, intervals } = JSON.parse(readFileSync(file, 'utf8'));
      return {
        server: server.sort((a, b) => a - b),
        outside: outside.sort((a, b) => a - b),
        blame,
        gcs,
        intervals,
      };
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error(`no span probe output in ${file}`);
}

/** "n slow: g with a GC, t with an interval callback, rest neither" for one side's slowest 1 %. */
const blameText = (b) => `${b.slow} (${b.gc} GC, ${b.timer} timer, ${b.slow - b.either} neither)`;

const afterText = (a) => `${a.workUs.toFixed(0)} / ${a.waitUs.toFixed(0)}`;
const q = (xs, p) => xs[Math.min(xs.length - 1, Math.floor(p * xs.length))];

/** --trace-gc lines in the log since `from` (chars): scavenges and mark-compacts, their pauses in ms. */
function gcSince(log, from) {
  const lines = log.slice(from).split('\n');
  const out = { scavenges: 0, scavengeMs: [], markCompacts: 0, markMs: [] };
  for (const l of lines) {
    const m =
      /: (Scavenge|Mark-Compact|Mark-sweep)[^,]*?,? ?[\d.]+ \([\d.]+\) -> [\d.]+ \([\d.]+\) MB, (?:pooled: [\d.]+ MB, )?([\d.]+) \/ ([\d.]+) ms/.exec(
        l,
      );
    if (!m) continue;
    if (m[1] === 'Scavenge') {
      out.scavenges++;
      out.scavengeMs.push(Number(m[2]));
    } else {
      out.markCompacts++;
      out.markMs.push(Number(m[2]));
    }
  }
  return out;
}

console.log(
  `# bench/tail, machine: ${machine()}; server on cpu ${serverCpu}, perf_analyzer on cpu ${generatorCpu}; ~${seconds} s per point, ${rounds} round(s)${shield ? '; SHIELDED (SCHED_RR)' : ''}; ${new Date().toISOString()}`,
);
const rows = new Map(variants.map((v) => [v.name, []]));
const floors = { 'grpc-js': [], frames: [] };
try {
  for (let k = 0; k < rounds; k++) {
    for (const transport of Object.keys(floors)) {
      const canned = await startCanned('mlp', transport);
      try {
        await perf(canned.url, 4, 200);
        floors[transport].push(await latencies(canned.url, seconds));
      } finally {
        await canned.proc.stop();
      }
    }
    for (let j = 0; j < variants.length; j++) {
      const v = variants[(j + k) % variants.length];
      const s = await startServer(v);
      try {
        await perf(s.url, 16, 200);
        await perf(s.url, 1, 300);
        const logFrom = s.proc.logs().length;
        const t0 = treeTicks(s.proc.p.pid);
        if (span) s.proc.p.kill('SIGUSR2');
        const c1 = await latencies(s.url, seconds);
        if (span) s.proc.p.kill('SIGUSR2');
        const cpuUs = ((treeTicks(s.proc.p.pid) - t0) * TICK_US) / c1.lat.length;
        const gc = traceGc ? gcSince(s.proc.logs(), logFrom) : null;
        const c16 = skip16 ? null : await perf(s.url, 16, Math.round((seconds * 1000) / 3));
        const spans = span ? await readSpans(s.spanOut) : null;
        rows.get(v.name).push({ c1, cpuUs, gc, c16, spans });
        const g = gc
          ? ` gc: ${gc.scavenges} scavenges (${(gc.scavenges / c1.wallS).toFixed(1)}/s, median ${q(
              gc.scavengeMs.sort((a, b) => a - b),
              0.5,
            )} ms, max ${Math.max(...gc.scavengeMs, 0)} ms), ${gc.markCompacts} mark`
          : '';
        const sp = spans
          ? ` span: server ${['0.5', '0.99', '0.999'].map((p) => q(spans.server, Number(p)).toFixed(0)).join('/')}, outside ${['0.5', '0.99', '0.999'].map((p) => q(spans.outside, Number(p)).toFixed(0)).join('/')} µs (p50/p99/p99.9); slowest 1 %: server ${blameText(spans.blame.server)}, outside ${blameText(spans.blame.outside)}, its work after the answer / wait for the next read median ${afterText(spans.blame.outside.all)} µs, slowest 1 % ${afterText(spans.blame.outside.slowest)} µs (${spans.gcs} gcs, ${spans.intervals} interval callbacks)`
          : '';
        console.log(
          `round ${k} ${v.name}: n ${c1.lat.length} p50 ${q(c1.lat, 0.5).toFixed(0)} p90 ${q(c1.lat, 0.9).toFixed(0)} p99 ${q(c1.lat, 0.99).toFixed(0)} p99.9 ${q(c1.lat, 0.999).toFixed(0)} max ${c1.lat.at(-1).toFixed(0)} µs; cpu ${cpuUs.toFixed(0)} µs/req; c16 ${c16 ? c16.rps.toFixed(0) : '-'}/s${g}${sp}`,
        );
      } catch (err) {
        console.error(`hloserve ${v.name} failed; its log ends:\n${s.proc.logs().slice(-3000)}`);
        throw err;
      } finally {
        await s.proc.stop();
      }
    }
    for (const [t, xs] of Object.entries(floors)) {
      const l = xs.at(-1).lat;
      console.log(
        `round ${k} canned ${t}: p50 ${q(l, 0.5).toFixed(0)} p99 ${q(l, 0.99).toFixed(0)} p99.9 ${q(l, 0.999).toFixed(0)} µs`,
      );
    }
  }
} finally {
  removeTmp();
}

const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
const f0 = (x) => (x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(0));
console.log(
  '\n| server | c=1 p50 µs | p90 | p99 | p99.9 | max | CPU µs/req c=1 | c=16 infer/s | p99 per round | server span p50 / p99 / p99.9 µs | outside p50 / p99 / p99.9 µs |',
);
console.log('|---|---|---|---|---|---|---|---|---|---|---|');
for (const [t, xs] of Object.entries(floors))
  console.log(
    `| canned ${t} | ${f0(med(xs.map((r) => q(r.lat, 0.5))))} | ${f0(med(xs.map((r) => q(r.lat, 0.9))))} | ${f0(med(xs.map((r) => q(r.lat, 0.99))))} | ${f0(med(xs.map((r) => q(r.lat, 0.999))))} | ${f0(med(xs.map((r) => r.lat.at(-1))))} | | | ${xs.map((r) => f0(q(r.lat, 0.99))).join(' ')} | | |`,
  );
/** Median over rounds of each quantile of one side of the span probe's split, or '-' without --span. */
function spanCell(rs, side) {
  if (!span) return '-';
  return [0.5, 0.99, 0.999].map((p) => f0(med(rs.map((r) => q(r.spans[side], p))))).join(' / ');
}
for (const v of variants) {
  const rs = rows.get(v.name);
  console.log(
    `| ${v.name} | ${f0(med(rs.map((r) => q(r.c1.lat, 0.5))))} | ${f0(med(rs.map((r) => q(r.c1.lat, 0.9))))} | ${f0(med(rs.map((r) => q(r.c1.lat, 0.99))))} | ${f0(med(rs.map((r) => q(r.c1.lat, 0.999))))} | ${f0(med(rs.map((r) => r.c1.lat.at(-1))))} | ${f0(med(rs.map((r) => r.cpuUs)))} | ${skip16 ? '-' : f0(med(rs.map((r) => r.c16.rps)))} | ${rs.map((r) => f0(q(r.c1.lat, 0.99))).join(' ')} | ${spanCell(rs, 'server')} | ${spanCell(rs, 'outside')} |`,
  );
}
if (variants.length > 1) {
  const base = rows.get(variants[0].name);
  for (const v of variants.slice(1)) {
    const rs = rows.get(v.name);
    const r99 = rs.map((r, i) => q(r.c1.lat, 0.99) / q(base[i].c1.lat, 0.99));
    const r999 = rs.map((r, i) => q(r.c1.lat, 0.999) / q(base[i].c1.lat, 0.999));
    const r50 = rs.map((r, i) => q(r.c1.lat, 0.5) / q(base[i].c1.lat, 0.5));
    const t16 = skip16 ? [] : rs.map((r, i) => r.c16.rps / base[i].c16.rps);
    console.log(
      `\n${v.name} ÷ ${variants[0].name} per round: c=1 p50 ${r50.map((x) => x.toFixed(2)).join(' ')}; p99 ${r99.map((x) => x.toFixed(2)).join(' ')} (median ${med(r99).toFixed(2)}); p99.9 ${r999.map((x) => x.toFixed(2)).join(' ')} (median ${med(r999).toFixed(2)}); c=16 infer/s ${t16.map((x) => x.toFixed(2)).join(' ')}`,
    );
  }
}
if (process.env.HLOSERVE_TAIL_DUMP)
  writeFileSync(
    process.env.HLOSERVE_TAIL_DUMP,
    JSON.stringify(Object.fromEntries([...rows].map(([n, rs]) => [n, rs.map((r) => r.c1.lat)]))),
  );
