// bench/peers: hloserve against Seldon MLServer and KServe's Python ModelServer serving the same
// program (a bundle's batch-1 StableHLO, compiled through jax's own XLA by hlo_program.py: the
// peers have no batching, so they run one request per execution at every concurrency, while
// hloserve batches what arrives together), plus a canned-answer gRPC server as the floor. The model
// is examples/models/<--model> (mlp, or resnet: the CNN); names, datatypes and shapes come from its
// manifest (model-spec.mjs). Before measuring, each server answers one fixed input once and the
// peers' answers are compared with hloserve's (max abs diff), so the comparison is of one computation.
//
// One native generator for all: Triton's perf_analyzer over gRPC (KServe V2; the peers get
// Triton's ModelConfig RPC added by model_config_rpc.py, since perf_analyzer asks for it), closed
// loop at concurrency 1 and 16. The server under test runs on cpu 0 and perf_analyzer on cpu 1
// (taskset), so the generator never takes the server's core; one server runs at a time, each
// round starts each server fresh, and rounds interleave the servers (this VM drifts within
// minutes). Each point is three perf_analyzer time windows (about --seconds in all) after a short
// warm-up at concurrency 16. The server's CPU time per request is read from /proc (its whole process tree:
// MLServer infers in a worker process).
//
//   bash bench/peers/setup.sh            # venvs under .cache/peers (pip, from PyPI)
//   export HLOSERVE_PERF_ANALYZER=... HLOSERVE_PERF_ANALYZER_LD_PATH=...   (node scripts/setup-tests.mjs perf-analyzer prints them)
//   npm run build && node bench/peers/run.mjs [--model mlp|resnet] [--seconds 4] [--rounds 3]
//       [--only canned,hloserve,kserve,mlserver] [--server-cpu 0] [--generator-cpu 1] [--shield]
// --shield runs every server and perf_analyzer SCHED_RR (pinned.mjs): the servers compared without
// the machine's other load, a diagnostic labelled as such.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { InferenceClient, tensor } from '../../client/dist/src/index.js';
import { machine } from '../stats.mjs';
import { modelSpec } from './model-spec.mjs';
import {
  flag,
  generatorCpu,
  here,
  measure,
  median as med,
  perf,
  pinnedChild as child,
  port,
  removeTmp,
  root,
  serverCpu,
  shield,
  spread,
  startCanned,
  startHloserve,
  tmp,
  waitReady,
} from './pinned.mjs';

const spec = await modelSpec(root, flag('--model', 'mlp'));
const model = spec.name;
// The Python peers read the model from here (peer_model.py).
const peerEnv = { ...process.env, PYTHONPATH: here, HLOSERVE_PEER_MODEL: JSON.stringify(spec) };
const venvs = join(root, '.cache', 'peers');
const seconds = Number(flag('--seconds', '4'));
const rounds = Number(flag('--rounds', '3'));
const only = flag('--only', 'canned,hloserve,kserve,mlserver').split(',');
const concurrencies = [1, 16];

const starters = {
  canned: async () => ({ ...(await startCanned(model)), spec }),
  hloserve: async () => ({ ...(await startHloserve(root, model)), spec }),
  async mlserver() {
    const dir = join(tmp, `mlserver-${port()}`);
    mkdirSync(join(dir, model), { recursive: true });
    const [grpc, http, metrics] = [port(), port(), port()];
    writeFileSync(
      join(dir, 'settings.json'),
      JSON.stringify({ grpc_port: grpc, http_port: http, metrics_port: metrics }),
    );
    writeFileSync(
      join(dir, model, 'model-settings.json'),
      JSON.stringify({
        name: model,
        implementation: 'mlserver_model.HloModel',
        parameters: { uri: spec.bundle },
        // perf_analyzer builds its request from the metadata: the same shapes every server reports.
        inputs: spec.inputs.map(({ name, datatype, shape }) => ({ name, datatype, shape })),
        outputs: spec.outputs.map(({ name, datatype, shape }) => ({ name, datatype, shape })),
      }),
    );
    const proc = child(
      'mlserver',
      join(venvs, 'mlserver', 'bin', 'python'),
      [join(here, 'mlserver_start.py'), 'start', dir],
      { cwd: here, env: peerEnv },
    );
    const url = `127.0.0.1:${grpc}`;
    await waitReady(url, proc, 'mlserver', model);
    return { url, proc, spec };
  },
  async kserve() {
    const [grpc, http] = [port(), port()];
    const proc = child(
      'kserve',
      join(venvs, 'kserve', 'bin', 'python'),
      [join(here, 'kserve_model.py'), String(grpc), String(http)],
      { cwd: here, env: peerEnv },
    );
    const url = `127.0.0.1:${grpc}`;
    await waitReady(url, proc, 'kserve', model);
    return { url, proc, spec };
  },
};

/** A server's first output for one fixed batch-1 input (FP32 inputs; null for other datatypes). */
async function answer(url) {
  if (spec.inputs.some((t) => t.datatype !== 'FP32')) return null;
  const inputs = {};
  for (const t of spec.inputs) {
    const shape = [1, ...t.shape.slice(1)];
    const n = shape.reduce((a, b) => a * b, 1);
    inputs[t.name] = tensor(
      Float32Array.from({ length: n }, (_, i) => Math.sin(i * 0.37)),
      shape,
    );
  }
  const c = new InferenceClient({ url, retry: false, timeoutMs: 30_000 });
  try {
    return Float32Array.from((await c.model(model).infer(inputs)).output(spec.outputs[0].name).data);
  } finally {
    await c.close();
  }
}
const answers = new Map();

const names = Object.keys(starters).filter((n) => only.includes(n));
const results = new Map(names.map((n) => [n, new Map(concurrencies.map((c) => [c, []]))]));
const t0 = performance.now();
console.log(
  `# bench/peers, model ${model} (${spec.inputs.map((t) => `${t.name} ${t.datatype} [${t.shape}]`).join(', ')}; the peers run the batch-1 program once per request, they have no batching), machine: ${machine()}; perf_analyzer on cpu ${generatorCpu}, server on cpu ${serverCpu}; ~${seconds} s per point, ${rounds} round(s) interleaved${shield ? '; SHIELDED (SCHED_RR)' : ''}`,
);
try {
  for (let k = 0; k < rounds; k++) {
    // Rotate the order each round so no server always runs first.
    for (let j = 0; j < names.length; j++) {
      const n = names[(j + k) % names.length];
      const s = await starters[n]();
      try {
        if (!answers.has(n)) answers.set(n, await answer(s.url));
        await perf(s.url, 16, 200, spec); // warm-up: caches, JIT, the peers' lazy paths
        for (const c of concurrencies)
          results
            .get(n)
            .get(c)
            .push(await measure(s, c, seconds));
      } catch (err) {
        console.error(`${n} failed; its log ends:\n${s.proc.logs().slice(-3000)}`);
        throw err;
      } finally {
        await s.proc.stop();
      }
    }
  }
} finally {
  removeTmp();
}
console.log(`\n(${((performance.now() - t0) / 1000).toFixed(0)} s in all)\n`);
const ref = answers.get('hloserve');
for (const n of names.filter((x) => x === 'kserve' || x === 'mlserver')) {
  const a = answers.get(n);
  if (!ref || !a) continue;
  const diff = a.length === ref.length ? Math.max(...a.map((v, i) => Math.abs(v - ref[i]))) : NaN;
  console.log(
    `${n}'s ${spec.outputs[0].name} against hloserve's for one fixed input: max abs diff ${diff.toExponential(2)}`,
  );
}
if (ref) console.log('');
console.log(
  '| server | callers | infer/s (median) | each round | p50 µs | p99 µs | server CPU µs/infer | hloserve infer/s ÷ this: median (range) | this p99 ÷ hloserve p99: median (range) |',
);
console.log('|---|---|---|---|---|---|---|---|---|');
for (const c of concurrencies) {
  for (const n of names) {
    const rs = results.get(n).get(c);
    const h = results.get('hloserve')?.get(c);
    const other = h && n !== 'hloserve';
    const tput = other ? rs.map((r, i) => h[i].rps / r.rps) : [];
    const p99 = other ? rs.map((r, i) => r.p99 / h[i].p99) : [];
    console.log(
      `| ${n} | ${c} | ${med(rs.map((r) => r.rps)).toFixed(0)} | ${rs.map((r) => r.rps.toFixed(0)).join(' ')} | ${med(rs.map((r) => r.p50))} | ${med(rs.map((r) => r.p99))} | ${med(rs.map((r) => r.cpuUs)).toFixed(0)} | ${other ? `${med(tput).toFixed(2)} (${spread(tput)})` : ''} | ${other ? `${med(p99).toFixed(2)} (${spread(p99)})` : ''} |`,
    );
  }
}
const canned1 = results.get('canned')?.get(1);
const hlo1 = results.get('hloserve')?.get(1);
if (canned1 && hlo1) {
  const over = hlo1.map((r, i) => r.p50 - canned1[i].p50);
  console.log(
    `\nhloserve p50 over the canned floor at one caller, per round: ${over.join(' ')} µs (median ${med(over)}); floor p50 ${med(canned1.map((r) => r.p50))} µs`,
  );
}
const hc = results.get('hloserve');
if (hc) {
  const r = hc.get(1).map((x, i) => x.cpuUs / hc.get(16)[i].cpuUs);
  console.log(`hloserve CPU per request, c=1 ÷ c=16, per round: ${r.map((x) => x.toFixed(2)).join(' ')}`);
}
