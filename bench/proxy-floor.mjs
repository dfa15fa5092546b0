// bench/proxy-floor: what one extra hop can cost on this machine at all. perf_analyzer on the MLP
// (batch 1, gRPC) at concurrency 1 and 16 against one worker, in one run, along these paths:
//   direct    the worker itself
//   pipe      a plain TCP byte pipe in a Node process (net.Socket to net.Socket, TCP_NODELAY, no
//             HTTP/2 parsing): the floor for any proxy written in Node on this machine
//   gateway   the standalone gateway (this build), round_robin
//   baseline  another build's gateway (--baseline-cli PATH, e.g. a copy of an older dist under tmp/)
//   pinned    this build's gateway under `taskset -c CPU` (--pin-cpu CPU)
//   flagged   this build's gateway with extra node flags (--gateway-flags "--single-threaded-gc")
// The order rotates each round. CPU µs/request is the time the proxy process's threads ran over the
// run (/proc/PID/task/*/schedstat, ns; before session 15 the 10 ms ticks of /proc/PID/stat) divided
// by the request count.
// Usage: npm run build && nice -n 10 node bench/proxy-floor.mjs [--rounds 3] [--baseline-cli PATH]
//   [--pin-cpu 1] [--gateway-flags "..."] [--only-c 1]
import { spawn } from 'node:child_process';
import { createServer, connect } from 'node:net';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { SERVER_NODE_FLAGS } from '../engine/dist/src/node-flags.js';
import { grpcLoadArgs, runPerfAnalyzerCounted } from '../e2e/dist/src/perf-analyzer.js';
import { repoRoot, startServer } from '../e2e/dist/src/server-process.js';
import { schedstatMs } from './proc-cpu.mjs';
import { arg, fmt, machine } from './stats.mjs';

// The pipe, when this file is run as its own child: `node proxy-floor.mjs --serve-pipe HOST:PORT`.
if (arg('serve-pipe', null) !== null) {
  const [host, port] = arg('serve-pipe').split(':');
  const server = createServer({ noDelay: true }, (inbound) => {
    const outbound = connect({ host, port: Number(port), noDelay: true });
    inbound.pipe(outbound);
    outbound.pipe(inbound);
    const cut = () => {
      inbound.destroy();
      outbound.destroy();
    };
    inbound.on('error', cut).on('close', cut);
    outbound.on('error', cut).on('close', cut);
  });
  server.listen(0, '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`));
  process.on('SIGTERM', () => process.exit(0));
}

function startPipe(target) {
  const child = spawn(process.execPath, [new URL(import.meta.url).pathname, '--serve-pipe', target], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', (l) => resolve({ child, pid: child.pid, port: Number(l) }));
    child.once('exit', (code) => reject(new Error(`pipe exited ${code}`)));
  });
}

function startGateway(worker, cli, pinCpu, flags = []) {
  const argv = [
    ...SERVER_NODE_FLAGS,
    ...flags,
    cli,
    '--worker',
    worker,
    '--grpc-port',
    '0',
    '--http-port',
    '0',
    '--metrics-port',
    '0',
    '--console-port=-1',
    '--routing',
    'round_robin',
  ];
  const child =
    pinCpu === null
      ? spawn(process.execPath, argv, { stdio: ['ignore', 'ignore', 'pipe'] })
      : spawn('taskset', ['-c', String(pinCpu), process.execPath, ...argv], { stdio: ['ignore', 'ignore', 'pipe'] });
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stderr }).on('line', (line) => {
      try {
        const rec = JSON.parse(line);
        // taskset execs node in place, so the child's pid is the gateway's.
        if (rec.msg === 'listening') resolve({ child, pid: child.pid, port: rec.grpc });
      } catch {
        /* not a record */
      }
    });
    child.once('exit', (code) => reject(new Error(`gateway exited ${code}`)));
  });
}

const COUNT = { 1: 2000, 16: 6000 };

// A stalled --request-count run is cut after a minute and made again (runPerfAnalyzerCounted).
async function perf(url, c) {
  const args = [...grpcLoadArgs('mlp', url, c), '--request-count', String(COUNT[c])];
  const r = await runPerfAnalyzerCounted(args, {
    stallMs: 60_000,
    onStall: () => process.stderr.write(`perf_analyzer stalled against ${url} at c=${c}; running it again\n`),
  });
  if (r.status !== 0) throw new Error(`perf_analyzer failed:\n${r.output}`);
  return r.rows.get(c);
}

async function main() {
  const rounds = Number(arg('rounds', '3'));
  const baselineCli = arg('baseline-cli', null);
  const pinCpu = arg('pin-cpu', null);
  const onlyC = arg('only-c', null);
  const gatewayFlags = arg('gateway-flags', null);
  console.log(`# bench/proxy-floor, machine: ${machine()}`);
  const worker = await startServer({
    HLOSERVE_MODELS_INCLUDE: 'mlp',
    HLOSERVE_ENDPOINTS_MAX_CONCURRENT_REQUESTS: '1024',
  });
  const target = `127.0.0.1:${worker.ports.grpc}`;
  const spec = `w0=${target},127.0.0.1:${worker.ports.http}`;
  const cli = join(repoRoot, 'gateway', 'dist', 'src', 'cli.js');
  const proxies = new Map();
  proxies.set('pipe', await startPipe(target));
  proxies.set('gateway', await startGateway(spec, cli, null));
  if (baselineCli) proxies.set('baseline', await startGateway(spec, baselineCli, null));
  if (pinCpu !== null) proxies.set('pinned', await startGateway(spec, cli, pinCpu));
  if (gatewayFlags !== null)
    proxies.set('flagged', await startGateway(spec, cli, null, gatewayFlags.split(' ').filter(Boolean)));
  const vias = ['direct', ...proxies.keys()];
  const rows = [];
  try {
    for (const c of onlyC ? [Number(onlyC)] : [1, 16]) {
      for (let r = 0; r < rounds; r++) {
        for (let k = 0; k < vias.length; k++) {
          const via = vias[(k + r) % vias.length];
          const p = proxies.get(via);
          const url = p ? `127.0.0.1:${p.port}` : target;
          const before = p ? schedstatMs(p.pid) : 0;
          const row = await perf(url, c);
          const cpu = p ? ((schedstatMs(p.pid) - before) * 1000) / COUNT[c] : null;
          rows.push({ c, round: r, via, ...row, cpu });
          process.stderr.write(`c=${c} round ${r} ${via}: p50 ${row.p50} µs\n`);
        }
      }
    }
  } finally {
    for (const p of proxies.values()) p.child.kill('SIGTERM');
    await worker.stop();
  }
  console.log('\n| concurrency | round | path | throughput infer/s | p50 µs | p99 µs | proxy CPU µs/request |');
  console.log('|---|---|---|---|---|---|---|');
  for (const r of rows)
    console.log(
      `| ${r.c} | ${r.round} | ${r.via} | ${fmt(r.throughput)} | ${r.p50} | ${r.p99} | ${r.cpu === null ? '-' : fmt(r.cpu, 0)} |`,
    );
  const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
  console.log(
    '\n| concurrency | path | median p50 µs | added p50 µs (median of per-round differences) | per-round added p50 µs | median CPU µs/request |',
  );
  console.log('|---|---|---|---|---|---|');
  for (const c of [...new Set(rows.map((r) => r.c))]) {
    const d = rows.filter((r) => r.c === c && r.via === 'direct');
    console.log(`| ${c} | direct | ${med(d.map((r) => r.p50))} | - | - | - |`);
    for (const via of vias.slice(1)) {
      const g = rows.filter((r) => r.c === c && r.via === via);
      const added = g.map((r, i) => r.p50 - d[i].p50);
      console.log(
        `| ${c} | ${via} | ${med(g.map((r) => r.p50))} | ${med(added)} | ${added.join(', ')} | ${fmt(med(g.map((r) => r.cpu)), 0)} |`,
      );
    }
  }
}

if (arg('serve-pipe', null) === null) await main();
