// bench/gateway: (1) what the gateway adds to a request: perf_analyzer on the MLP at concurrency
// 1 and 16 against one worker directly and through a gateway process in front of that same
// worker, alternating within one run; (2) how evenly lpt_packing spreads skewed traffic over
// workers against round_robin: a simulation of larger fleets from the packing code itself, and
// a measured run of three CPU workers behind the supervisor.
// Usage: npm run build && nice -n 10 node bench/gateway.mjs [--rounds 3] [--skip-measured-spread]
//   [--only-latency] [--skip-latency] [--baseline-cli PATH]: PATH is another build's gateway/dist/src/cli.js (e.g. an
//   older commit's dist copied under tmp/), run as a third path in the same alternation.
//   [--settle-runs 2]: traffic runs after the warm-up (both modes alike), so lpt_packing's per-window
//   feedback has windows to act on before the measured run. [--measured-runs 1]: measured runs per start.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { get } from 'node:http';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { SERVER_NODE_FLAGS } from '../engine/dist/src/node-flags.js';
import { computeSplitAssignment } from '../gateway/dist/src/placement/split-packing.js';
import { DEFAULT_PLACEMENT, PlacementController } from '../gateway/dist/src/placement/placement-controller.js';
import { simulateFleet } from '../gateway/dist/src/testing/fleet-sim.js';
import { DEFAULT_FEEDBACK } from '../gateway/dist/src/placement/worker-feedback.js';
import { DEFAULT_SPREAD_TRIGGER } from '../gateway/dist/src/placement/spread-trigger.js';
import { DEFAULT_DEBT } from '../gateway/dist/src/placement/device-debt.js';
import { loadavg } from 'node:os';
import { grpcLoadArgs, runPerfAnalyzer } from '../e2e/dist/src/perf-analyzer.js';
import { repoRoot, startServer } from '../e2e/dist/src/server-process.js';
import { arg, fmt, machine } from './stats.mjs';

const rounds = Number(arg('rounds', '3'));
const baselineCli = arg('baseline-cli', null);
const onlyLatency = process.argv.includes('--only-latency');
const skipLatency = process.argv.includes('--skip-latency');
const settleRuns = Number(arg('settle-runs', '2'));
const measuredRuns = Number(arg('measured-runs', '1'));
const load1 = () => loadavg()[0].toFixed(1);

console.log(`# bench/gateway, machine: ${machine()}`);

/** CPU time (user + system) a process has used, in ms (Linux /proc, 10 ms ticks). */
function cpuMs(pid) {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
}

const httpText = (url) =>
  new Promise((resolve, reject) =>
    get(url, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve(body));
    }).on('error', reject),
  );

/** Starts the standalone gateway in its own process; resolves with its ports once it listens. */
const DEFAULT_CLI = join(repoRoot, 'gateway', 'dist', 'src', 'cli.js');
function startGateway(workers, extra = [], cli = DEFAULT_CLI) {
  const child = spawn(
    process.execPath,
    [
      ...SERVER_NODE_FLAGS,
      cli,
      ...workers.flatMap((w) => ['--worker', w]),
      '--grpc-port',
      '0',
      '--http-port',
      '0',
      '--metrics-port',
      '0',
      // No console listener (an older build given by --baseline-cli has no such flag).
      ...(cli === DEFAULT_CLI ? ['--console-port=-1'] : []),
      ...extra,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stderr }).on('line', (line) => {
      try {
        const rec = JSON.parse(line);
        if (rec.msg === 'listening') resolve({ child, ports: rec });
      } catch {
        /* not a record */
      }
    });
    child.once('exit', (code) => reject(new Error(`gateway exited ${code}`)));
  });
}

// A fixed request count, not perf_analyzer's stability search, which a busy 2-core VM rarely
// satisfies; direct and gateway runs alternate so drift hits both alike.
async function perf(url, c) {
  const r = await runPerfAnalyzer([...grpcLoadArgs('mlp', url, c), '--request-count', String(c === 1 ? 2000 : 6000)]);
  if (r.status !== 0) throw new Error(`perf_analyzer failed:\n${r.output}`);
  return r.rows.get(c);
}

// 1. Added latency.
if (!skipLatency) {
  const worker = await startServer({
    HLOSERVE_MODELS_INCLUDE: 'mlp',
    HLOSERVE_ENDPOINTS_MAX_CONCURRENT_REQUESTS: '1024',
  });
  const gw = await startGateway(
    [`w0=127.0.0.1:${worker.ports.grpc},127.0.0.1:${worker.ports.http}`],
    ['--routing', 'round_robin'],
  );
  const base = baselineCli
    ? await startGateway(
        [`w0=127.0.0.1:${worker.ports.grpc},127.0.0.1:${worker.ports.http}`],
        ['--routing', 'round_robin'],
        baselineCli,
      )
    : null;
  const rows = [];
  const vias = ['direct', 'gateway', ...(base ? ['baseline'] : [])];
  try {
    for (const c of [1, 16]) {
      for (let r = 0; r < rounds; r++) {
        // Rotate the order each round so no path always runs first after a pause.
        for (let k = 0; k < vias.length; k++) {
          const via = vias[(k + r) % vias.length];
          const url = via === 'direct' ? worker.grpcUrl() : `127.0.0.1:${(via === 'gateway' ? gw : base).ports.grpc}`;
          const proc = via === 'gateway' ? gw.child : via === 'baseline' ? base.child : null;
          const before = proc ? cpuMs(proc.pid) : 0;
          const row = await perf(url, c);
          // perf_analyzer's request count plus its few warm-up calls: close enough per request.
          const cpu = proc ? ((cpuMs(proc.pid) - before) * 1000) / (c === 1 ? 2000 : 6000) : null;
          rows.push({ c, via, ...row, cpu });
        }
      }
    }
  } finally {
    gw.child.kill('SIGTERM');
    base?.child.kill('SIGTERM');
    await worker.stop();
  }
  console.log('\n## added latency (perf_analyzer, mlp batch 1, gRPC, one worker; direct and gateway alternate)\n');
  console.log('| concurrency | path | throughput infer/s | p50 µs | p99 µs | gateway CPU µs/request |');
  console.log('|---|---|---|---|---|---|');
  for (const r of rows)
    console.log(
      `| ${r.c} | ${r.via} | ${fmt(r.throughput)} | ${r.p50} | ${r.p99} | ${r.cpu === null ? '-' : fmt(r.cpu, 0)} |`,
    );
  const med = (xs) => xs.sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
  for (const via of vias.slice(1)) {
    console.log(
      `\n| concurrency | median p50 direct µs | median p50 ${via} µs | added p50 µs | added p99 µs | p50 ratio per round (${via}/direct) | median ${via} CPU µs/request |`,
    );
    console.log('|---|---|---|---|---|---|---|');
    for (const c of [1, 16]) {
      const d = rows.filter((r) => r.c === c && r.via === 'direct');
      const g = rows.filter((r) => r.c === c && r.via === via);
      const ratios = g.map((r, i) => fmt(r.p50 / d[i].p50, 2)).join(', ');
      const [d50, g50] = [med(d.map((r) => r.p50)), med(g.map((r) => r.p50))];
      const [d99, g99] = [med(d.map((r) => r.p99)), med(g.map((r) => r.p99))];
      const cpu = med(g.map((r) => r.cpu));
      console.log(`| ${c} | ${d50} | ${g50} | ${g50 - d50} | ${g99 - d99} | ${ratios} | ${fmt(cpu, 0)} |`);
    }
  }
}
if (onlyLatency) process.exit(0);

// 2a. Work spread, simulated: Zipf(1) traffic over M models on W workers, the packing the gateway
// runs on measured load (split-packing: loads may split over weighted replicas), the hottest
// models with an operator's replica count, memory caps that hold a third of the models per worker under round robin's
// every-model-everywhere rule. Load = share of the fleet's compute.
{
  console.log('\n## work spread over skewed traffic, simulated (Zipf(1) utilisation, packing code of gateway/)\n');
  console.log('| workers | models | mode | max/mean load | models held per worker (max) |');
  console.log('|---|---|---|---|---|');
  for (const [W, M] of [
    [4, 24],
    [8, 64],
    [16, 200],
  ]) {
    const u = new Map(Array.from({ length: M }, (_, i) => [`m${i}`, 1 / (i + 1)]));
    const total = [...u.values()].reduce((a, b) => a + b, 0);
    const mean = total / W;
    // Any model hotter than a worker's fair share gets enough replicas to fit under it.
    const replicas = new Map(
      [...u].filter(([, x]) => x > mean * 0.5).map(([m, x]) => [m, Math.min(W, Math.ceil((2 * x) / mean))]),
    );
    const workers = Array.from({ length: W }, (_, i) => `w${String(i).padStart(2, '0')}`);
    const res = computeSplitAssignment({ utilisation: u, workers, replicas });
    const loads = [...res.computeLoad.values()];
    const held = new Map(workers.map((w) => [w, 0]));
    for (const p of res.placement.values()) for (const w of p.workers) held.set(w, held.get(w) + 1);
    console.log(
      `| ${W} | ${M} | lpt_packing | ${fmt(Math.max(...loads) / (loads.reduce((a, b) => a + b, 0) / W), 3)} | ${Math.max(...held.values())} |`,
    );
    console.log(`| ${W} | ${M} | round_robin | 1.000 | ${M} |`);
  }
}

// 2a'. Work spread in closed loop: the controller against a simulated fleet whose workers differ
// in speed (device time per unit of load uniform in [0.7, 1.3]), 3 % noise per window, 5 s polls,
// Zipf(1) demand, the hottest models with an operator's count as above; the spread is measured
// device time per window (max/mean), the mean of the last 20 of 60 windows, with the per-replica
// feedback and without it (gain 0), with the device debt's payback and without it; and the spread
// of the last 20 windows' device time taken together (what a run of that length measures: the
// payback trades a window's evenness for the sum's).
{
  console.log('\n## work spread in closed loop, simulated (workers of unequal speed, controller of gateway/)\n');
  console.log(
    '| workers | models | feedback | spread trigger | debt payback | measured max/mean, last 20 of 60 windows (mean, worst) | the 20 together | joins | replica-set changes |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const [W, M] of [
    [4, 24],
    [8, 64],
    [16, 200],
  ]) {
    let seed = 7 + W;
    const rnd = () => ((seed = (seed * 16807) % 2147483647) - 1) / 2147483646;
    const workers = Array.from({ length: W }, (_, i) => `w${String(i).padStart(2, '0')}`);
    const speed = new Map(workers.map((w) => [w, 0.7 + 0.6 * rnd()]));
    const demand = new Map(Array.from({ length: M }, (_, i) => [`m${i}`, (0.5 * W) / (i + 1) / Math.log(M)]));
    const mean = [...demand.values()].reduce((a, b) => a + b, 0) / W;
    const replicas = new Map(
      [...demand].filter(([, x]) => x > mean * 0.5).map(([m, x]) => [m, Math.min(W, Math.ceil((2 * x) / mean))]),
    );
    for (const [gain, threshold, debt] of [
      [DEFAULT_FEEDBACK.gain, DEFAULT_SPREAD_TRIGGER.threshold, DEFAULT_DEBT.gain],
      [DEFAULT_FEEDBACK.gain, DEFAULT_SPREAD_TRIGGER.threshold, 0],
      [DEFAULT_FEEDBACK.gain, 0, 0],
      [0, 0, 0],
    ]) {
      const ctrl = new PlacementController({
        ...DEFAULT_PLACEMENT,
        firstRebalanceComputeSeconds: 5,
        rebalanceComputeSeconds: 30,
        replicas,
        feedback: { ...DEFAULT_FEEDBACK, gain },
        spreadTrigger: { ...DEFAULT_SPREAD_TRIGGER, threshold },
        debt: { ...DEFAULT_DEBT, gain: debt },
      });
      const run = simulateFleet(ctrl, { speed, demand, noise: 0.03 }, 60);
      const tail = run.slice(-20).map((x) => x.spread);
      const sum = new Map();
      for (const x of run.slice(-20)) for (const [w, d] of x.measured) sum.set(w, (sum.get(w) ?? 0) + d);
      const together = Math.max(...sum.values()) / ([...sum.values()].reduce((a, b) => a + b, 0) / sum.size);
      let changes = 0;
      for (let i = 1; i < run.length; i++)
        for (const [m, p] of run[i].placement)
          if (p.workers.join() !== run[i - 1].placement.get(m)?.workers.join()) changes++;
      console.log(
        `| ${W} | ${M} | ${gain > 0 ? 'on' : 'off'} | ${threshold > 0 ? 'on' : 'off'} | ${debt > 0 ? 'on' : 'off'} | ${fmt(tail.reduce((a, b) => a + b, 0) / tail.length, 3)}, ${fmt(Math.max(...tail), 3)} | ${fmt(together, 3)} | ${ctrl.joins} | ${changes} |`,
      );
    }
  }
}

// 2a''. The measured bench's mix in closed loop: three equal workers, mlp (operator's count 2), fno
// and resnet in the measured runs' proportions, a replica's cost rising with its share (batching),
// 2 % noise per worker, and noise on each model's cost common to every worker, held for a whole
// "run" of 15 one-second polls (a run's phases and the machine's load change one model's cost
// against another's for the run). Spread per run, lpt_packing with and without the device debt's
// payback, round_robin beside them.
{
  console.log(
    '\n## the measured mix in closed loop, simulated: per-model cost noise held over each run, lpt_packing against round_robin\n',
  );
  console.log(
    '| per-model cost noise per run | mode | max/mean per 15-poll run: median, p90, worst | runs within 5 % |',
  );
  console.log('|---|---|---|---|');
  const speed = new Map(['w0', 'w1', 'w2'].map((w) => [w, 1]));
  // Device time per second as the measured runs split it (mlp 46-52 %, fno 40-46 %, resnet 5-6 %).
  const demand = new Map([
    ['mlp', 0.7],
    ['fno', 0.6],
    ['resnet', 0.08],
  ]);
  const batching = new Map([
    ['mlp', 0.5],
    ['fno', 1],
    ['resnet', 0],
  ]);
  const everywhere = {
    startup: () => ({
      placement: new Map([...demand.keys()].map((m) => [m, { workers: ['w0', 'w1', 'w2'], weights: [1, 1, 1] }])),
    }),
    tick: () => null,
  };
  const RUN = 15;
  for (const modelNoise of [0, 0.1, 0.2, 0.4]) {
    for (const mode of ['lpt_packing, no payback', 'lpt_packing', 'round_robin']) {
      const ctrl =
        mode === 'round_robin'
          ? everywhere
          : new PlacementController({
              ...DEFAULT_PLACEMENT,
              firstRebalanceComputeSeconds: 5,
              rebalanceComputeSeconds: 30,
              replicas: new Map([['mlp', 2]]),
              debt: { ...DEFAULT_DEBT, gain: mode === 'lpt_packing' ? DEFAULT_DEBT.gain : 0 },
            });
      const run = simulateFleet(
        ctrl,
        { speed, demand, noise: 0.02, batching, modelNoise, modelNoiseWindows: RUN },
        200 * RUN,
        1000,
        3,
      );
      const runs = [];
      for (let i = 20 * RUN; i + RUN <= run.length; i += RUN) {
        const tot = new Map();
        for (const w of run.slice(i, i + RUN)) for (const [k, x] of w.measured) tot.set(k, (tot.get(k) ?? 0) + x);
        const v = [...tot.values()];
        runs.push(Math.max(...v) / (v.reduce((a, b) => a + b, 0) / v.length));
      }
      runs.sort((a, b) => a - b);
      console.log(
        `| ±${fmt(modelNoise * 100, 0)} % | ${mode} | ${fmt(runs[runs.length >> 1], 3)}, ${fmt(runs[Math.floor(runs.length * 0.9)], 3)}, ${fmt(runs[runs.length - 1], 3)} | ${fmt((100 * runs.filter((x) => x <= 1.05).length) / runs.length, 0)} % |`,
      );
    }
  }
}

// 2b. Work spread, measured: three workers behind the supervisor, skewed traffic on the three
// example models, per-worker device time from each worker's executions (hloserve_execution_duration_us:
// each batch once; Triton's per-request compute_infer, which this read before session 16, counts a
// batch of n n times).
if (!process.argv.includes('--skip-measured-spread')) {
  const shares = { mlp: 16, fno: 3, resnet: 1 };
  const counts = { mlp: 4000, fno: 300, resnet: 40 };
  console.log(
    '\n## work spread, measured (3 CPU workers, perf_analyzer per model at concurrency mlp 8, fno 2, resnet 1)\n',
  );
  console.log(
    '| mode | run | load (1-min) at start, end | device s per worker (w0, w1, w2) | max/mean | models receiving traffic per worker | device s per model (mlp, fno, resnet) |',
  );
  console.log('|---|---|---|---|---|---|---|');
  for (const [mode, extra] of [
    ['round_robin', []],
    ['lpt_packing', ['--replicas', 'mlp=2']],
  ]) {
    const node = await startServer({}, 600_000, ['--workers', '3', '--base-port', '0', '--routing', mode, ...extra]);
    try {
      const url = node.grpcUrl();
      // Warm up so the placement sees traffic, then measure.
      const run = () =>
        Promise.all(
          Object.entries(shares).map(
            ([m, w]) =>
              new Promise((resolve) => {
                const c = Math.max(1, Math.round(w / 2));
                const child = spawn(process.execPath, [
                  '-e',
                  `import('${join(repoRoot, 'e2e', 'dist', 'src', 'perf-analyzer.js')}').then(async ({grpcLoadArgs,runPerfAnalyzer})=>{const r=await runPerfAnalyzer([...grpcLoadArgs('${m}','${url}',${c}),'--request-count','${counts[m]}']);process.exit(r.status??1)})`,
                ]);
                child.once('exit', resolve);
              }),
          ),
        );
      const stats = async () => {
        const text = await httpText(`http://127.0.0.1:${node.ports.metrics}/metrics`);
        const per = new Map();
        for (const m of text.matchAll(
          /^hloserve_execution_duration_us\{worker="(\w+)",model="(\w+)"[^}]*\} ([\d.e+]+)/gm,
        )) {
          const w = per.get(m[1]) ?? new Map();
          w.set(m[2], Number(m[3]) / 1e6);
          per.set(m[1], w);
        }
        return per;
      };
      // Each replica with its share of the model's requests (a build without weights: placed = 1).
      const placementNow = async () => {
        const gwText = await httpText(`http://127.0.0.1:${node.ports.metrics}/metrics`);
        const weights = new Map(
          [...gwText.matchAll(/^hloserve_gateway_placement_weight\{model="(\w+)",worker="(\w+)"\} (\S+)/gm)].map(
            (m) => [`${m[1]}@${m[2]}`, Number(m[3])],
          ),
        );
        const placed = [...gwText.matchAll(/^hloserve_gateway_placement\{model="(\w+)",worker="(\w+)"\} 1/gm)].map(
          (m) => `${m[1]}@${m[2]}${weights.has(`${m[1]}@${m[2]}`) ? `:${fmt(weights.get(`${m[1]}@${m[2]}`), 2)}` : ''}`,
        );
        const repacks = /^hloserve_gateway_repacks_total (\d+)/m.exec(gwText)?.[1];
        const joins = /^hloserve_gateway_spread_joins_total (\d+)/m.exec(gwText)?.[1];
        const spread = /^hloserve_gateway_measured_spread (\S+)/m.exec(gwText)?.[1];
        return `${repacks} packings${joins === undefined ? '' : `, ${joins} joins, last span's spread ${fmt(Number(spread), 3)}`}, ${placed.join(' ')}`;
      };
      // Warm up until the placement has repacked from measured traffic (the startup packing is
      // count 1): on a fast fleet one warm-up run can end before the gateway's 5 s polls have seen
      // the two windows and 5 device-seconds its first traffic repack waits for. At most 6 runs.
      const repacksNow = async () =>
        Number(
          /^hloserve_gateway_repacks_total (\d+)/m.exec(
            await httpText(`http://127.0.0.1:${node.ports.metrics}/metrics`),
          )?.[1] ?? 0,
        );
      for (let i = 0; i < 6; i++) {
        await run();
        if (mode !== 'lpt_packing' || (await repacksNow()) >= 2) break;
      }
      for (let i = 0; i < settleRuns; i++) await run();
      for (let k = 0; k < measuredRuns; k++) {
        const loadStart = load1();
        const before = await stats();
        const placedBefore = await placementNow();
        await run();
        const after = await stats();
        const perWorker = ['worker0', 'worker1', 'worker2'].map((w) => {
          let s = 0;
          let models = 0;
          for (const [m, v] of after.get(w) ?? []) {
            const d = v - (before.get(w)?.get(m) ?? 0);
            s += d;
            if (d > 0.01) models++;
          }
          return { s, models };
        });
        const mean = perWorker.reduce((a, b) => a + b.s, 0) / 3;
        // Each model's device time over the fleet: its cost against the others' moves from run to
        // run with the phases and the machine's load, whatever the placement.
        const perModel = Object.keys(shares).map((m) =>
          ['worker0', 'worker1', 'worker2'].reduce(
            (a, w) => a + (after.get(w)?.get(m) ?? 0) - (before.get(w)?.get(m) ?? 0),
            0,
          ),
        );
        if (mode === 'lpt_packing') {
          const factors = [
            ...(await httpText(`http://127.0.0.1:${node.ports.metrics}/metrics`)).matchAll(
              /^hloserve_gateway_replica_cost_factor\{model="(\w+)",worker="(\w+)"\} (\S+)/gm,
            ),
          ].map((m) => `${m[1]}@${m[2]}:${fmt(Number(m[3]), 2)}`);
          const wf = [
            ...(await httpText(`http://127.0.0.1:${node.ports.metrics}/metrics`)).matchAll(
              /^hloserve_gateway_worker_load_factor\{worker="(\w+)"\} (\S+)/gm,
            ),
          ].map((m) => `${m[1]}:${fmt(Number(m[2]), 2)}`);
          factors.push(`; worker factors ${wf.join(' ') || 'none'}`);
          const debts = [
            ...(await httpText(`http://127.0.0.1:${node.ports.metrics}/metrics`)).matchAll(
              /^hloserve_gateway_worker_device_debt_seconds\{worker="(\w+)"\} (\S+)/gm,
            ),
          ].map((m) => `${m[1]}:${fmt(Number(m[2]), 2)}`);
          factors.push(`; device debts ${debts.join(' ') || 'none'}`);
          // Which worker did what: each worker's device-seconds per model over the run.
          const mix = ['worker0', 'worker1', 'worker2'].map(
            (w) =>
              `${w} ${Object.keys(shares)
                .map((m) => `${m}:${fmt((after.get(w)?.get(m) ?? 0) - (before.get(w)?.get(m) ?? 0), 2)}`)
                .join(' ')}`,
          );
          factors.push(`; device s per worker and model ${mix.join(', ')}`);
          console.error(
            `lpt_packing run ${k + 1} placement (packings counted with the startup one): as the measured run began ${placedBefore}; at its end ${await placementNow()}; cost factors ${factors.join(' ') || 'none'}`,
          );
        }
        console.log(
          `| ${mode} | ${k + 1} | ${loadStart}, ${load1()} | ${perWorker.map((p) => fmt(p.s, 2)).join(', ')} | ${fmt(Math.max(...perWorker.map((p) => p.s)) / mean, 3)} | ${perWorker.map((p) => p.models).join(', ')} | ${perModel.map((x) => fmt(x, 2)).join(', ')} |`,
        );
      }
    } finally {
      await node.stop();
    }
  }
}
