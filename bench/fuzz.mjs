// bench/fuzz: the long fuzzing run. The targets of engine/test/fuzz/surfaces.ts (gRPC ModelInfer
// and shared-memory messages, HTTP JSON and binary bodies against a real in-process server; the
// HTTP body codec, manifest and safetensors parsers in-process) and of control-surfaces.ts (every
// control API operation shaped by its schema, and WebSocket feed sessions, against a real control
// app over a real Worker and SQLite) and of gateway-surfaces.ts (the gateway's HTTP proxy in front
// of the served worker) and of hook-surfaces.ts (what bundle hooks return, throw or pass to a meta
// model's calls, against a worker serving hooked models), round-robin in seeded batches
// until the input budget or the time limit, whichever comes first. Prints executions, findings
// and time per target, and the findings themselves; exits 1 if there was any.
// Usage: npm run build && nice -n 10 node bench/fuzz.mjs [--inputs 1000000] [--until 22:50] [--seed 1]
//   --until HH:MM (UTC) stops at that time whatever the count; --server-share 0.05 is the share of
//   inputs sent to the served targets (the rest go to the much faster in-process parsers).
import { parseArgs } from 'node:util';
import { startSurface } from '../engine/dist/test/transports/surface.js';
import {
  createFuzzShm,
  grpcTargets,
  httpTargets,
  jsonCodecTarget,
  manifestTarget,
  runTarget,
  safetensorsTarget,
} from '../engine/dist/test/fuzz/surfaces.js';
import { controlOperations, controlRestTarget, feedTarget } from '../engine/dist/test/fuzz/control-surfaces.js';
import { adminToken, mint, startControl, startMlpWorker, tempDir } from '../engine/dist/test/control/harness.js';
import { rmSync } from 'node:fs';
import { serveGateway } from '../gateway/dist/src/index.js';
import { gatewayHttpTarget } from '../engine/dist/test/fuzz/gateway-surfaces.js';
import { hookTarget, startHookSurface } from '../engine/dist/test/fuzz/hook-surfaces.js';
import { machine } from './stats.mjs';

const { values } = parseArgs({
  options: {
    inputs: { type: 'string', default: '1000000' },
    until: { type: 'string' },
    seed: { type: 'string', default: '1' },
    'server-share': { type: 'string', default: '0.05' },
    batch: { type: 'string', default: '500' },
  },
});
const budget = Number(values.inputs);
const batch = Number(values.batch);
const share = Number(values['server-share']);
let deadline = Infinity;
if (values.until) {
  const [h, m] = values.until.split(':').map(Number);
  const d = new Date();
  d.setUTCHours(h, m, 0, 0);
  deadline = d.getTime();
}

// Parsers differ 20x in speed (YAML is slow): batch sizes per target keep the wall time balanced.
const WEIGHT = { manifest: 1, 'http-json-codec': 4, safetensors: 4 };
// fast-check's generated YAML tags make the yaml package warn once per input: not findings.
process.removeAllListeners('warning');

const cleanup = createFuzzShm();
const surface = await startSurface({ maxJsonBytes: 8 << 20 });
// The gateway in front of the same worker, for its HTTP proxy.
await surface.http.listen({ host: '127.0.0.1', port: 0 });
const gateway = await serveGateway(
  {
    workers: [
      {
        name: 'w0',
        address: {
          grpc: `127.0.0.1:${surface.grpc.port}`,
          http: `127.0.0.1:${surface.http.server.address().port}`,
          metrics: null,
        },
      },
    ],
  },
  { host: '127.0.0.1', grpcPort: 0, httpPort: 0, metricsPort: -1 },
);
const controlDir = tempDir();
const controlWorker = await startMlpWorker();
const control = await startControl(controlWorker, controlDir);
await control.control.app.listen({ host: '127.0.0.1', port: 0 });
const admin = await adminToken(control);
const creds = { admin, viewer: (await mint(control, admin, 'viewer')).token };
const hooks = await startHookSurface();
const feedUrl = `ws://127.0.0.1:${control.control.app.server.address().port}/api/v1/stream`;
const served = [
  ...grpcTargets(surface),
  ...httpTargets(surface),
  controlRestTarget(control, await controlOperations(control), creds),
  feedTarget(feedUrl, creds),
  gatewayHttpTarget(gateway.ports.http),
  hookTarget(hooks),
];
const pure = [jsonCodecTarget, manifestTarget, safetensorsTarget];
const per = new Map([...served, ...pure].map((t) => [t.name, { executions: 0, findings: [], ms: 0 }]));
const t0 = Date.now();
let total = 0;
let round = 0;
let servedDone = 0;
console.log(
  `# bench/fuzz, machine: ${machine()}, budget ${budget} inputs, until ${values.until ?? '-'} UTC, seed ${values.seed}`,
);
try {
  while (total < budget && Date.now() < deadline) {
    // Keep the served targets at `share` of all inputs; the parsers take the rest.
    const targets = servedDone < share * (total + 1) ? served : pure;
    for (const t of targets) {
      if (total >= budget || Date.now() >= deadline) break;
      const stats = per.get(t.name);
      const n = Math.min(targets === served ? Math.ceil(batch / 10) : batch * (WEIGHT[t.name] ?? 1), budget - total);
      const before = stats.executions;
      const t1 = performance.now();
      await runTarget(t, n, Number(values.seed) * 1_000_003 + round, stats);
      stats.ms += performance.now() - t1;
      total += stats.executions - before;
      if (targets === served) servedDone += stats.executions - before;
    }
    round++;
    if (round % 20 === 0) {
      const found = [...per.values()].reduce((a, s) => a + s.findings.length, 0);
      console.error(`  ${new Date().toISOString()} ${total} inputs, ${found} findings`);
    }
  }
} finally {
  await gateway.stop();
  await surface.close();
  await hooks.close();
  await control.close();
  await controlWorker.stop(false);
  rmSync(controlDir, { recursive: true, force: true });
  cleanup();
}
const seconds = (Date.now() - t0) / 1000;
console.log('| target | executions | findings | seconds | inputs/s |');
console.log('|---|---|---|---|---|');
for (const [name, s] of per) {
  console.log(
    `| ${name} | ${s.executions} | ${s.findings.length} | ${(s.ms / 1000).toFixed(1)} | ${(s.executions / (s.ms / 1000 || 1)).toFixed(0)} |`,
  );
}
const findings = [...per.values()].flatMap((s) => s.findings);
console.log(`| all | ${total} | ${findings.length} | ${seconds.toFixed(1)} | ${(total / seconds).toFixed(0)} |`);
for (const f of findings.slice(0, 50)) console.log(`finding ${f.target}: ${f.problem}\n  input: ${f.input}`);
process.exitCode = findings.length ? 1 : 0;
