// bench/placement-poll: what lpt_packing's placement poll costs per second of an idle fleet, the
// gateway's process and the worker's together. One worker (every example model) stands for three
// (it is named three times, so each poll asks it three times, as a fleet of three would be asked);
// gateways run one at a time, each alone for a window, the order rotated each round:
//   none      no gateway: the worker's own idle CPU
//   poll-1s   this build, the placement poll every second (the default)
//   poll-5s   this build, the poll every five seconds (session 13's period)
//   baseline  another build's gateway at its default (--baseline-dist PATH: its gateway/dist)
// CPU is the time each process's threads ran over the window (/proc/PID/task/TID/schedstat, in ns),
// in ms per second.
// Usage: npm run build && nice -n 10 node bench/placement-poll.mjs [--rounds 3] [--window-s 10]
//   [--baseline-dist /work/wt/s15base/gateway/dist]
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { SERVER_NODE_FLAGS } from '../engine/dist/src/node-flags.js';
import { repoRoot, startServer } from '../e2e/dist/src/server-process.js';
import { schedstatMs } from './proc-cpu.mjs';
import { arg, fmt, machine } from './stats.mjs';

// A gateway, when this file is run as its own child:
// `node placement-poll.mjs --serve DIST INTERVAL_MS|default WORKER_SPEC...`.
if (arg('serve', null) !== null) {
  const i = process.argv.indexOf('--serve');
  const [dist, interval, ...specs] = process.argv.slice(i + 1);
  const { serveGateway } = await import(join(dist, 'src', 'serve-gateway.js'));
  const workers = specs.map((s) => {
    const [name, rest] = s.split('=');
    const [grpc, http, metrics] = rest.split(',');
    return { name, address: { grpc, http, metrics, console: null } };
  });
  const gw = await serveGateway(
    { workers, mode: 'lpt_packing', ...(interval === 'default' ? {} : { placementIntervalMs: Number(interval) }) },
    { host: '127.0.0.1', grpcPort: 0, httpPort: 0, metricsPort: -1, consolePort: -1 },
  );
  process.stdout.write(`${gw.ports.grpc}\n`);
  process.on('SIGTERM', () => void gw.stop().then(() => process.exit(0)));
}

function startGateway(dist, interval, specs) {
  const child = spawn(
    process.execPath,
    [...SERVER_NODE_FLAGS, new URL(import.meta.url).pathname, '--serve', dist, interval, ...specs],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', () => resolve(child));
    child.once('exit', (code) => reject(new Error(`gateway exited ${code}`)));
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const rounds = Number(arg('rounds', '3'));
  const windowMs = Number(arg('window-s', '10')) * 1000;
  const baselineDist = arg('baseline-dist', null);
  console.log(`# bench/placement-poll, machine: ${machine()}`);
  const worker = await startServer({});
  const addr = `127.0.0.1:${worker.ports.grpc},127.0.0.1:${worker.ports.http},127.0.0.1:${worker.ports.metrics}`;
  const specs = ['w0', 'w1', 'w2'].map((n) => `${n}=${addr}`);
  const dist = join(repoRoot, 'gateway', 'dist');
  const paths = new Map([
    ['none', null],
    ['poll-1s', [dist, '1000']],
    ['poll-5s', [dist, '5000']],
  ]);
  if (baselineDist) paths.set('baseline', [baselineDist, 'default']);
  const names = [...paths.keys()];
  const rows = [];
  try {
    for (let r = 0; r < rounds; r++) {
      for (let k = 0; k < names.length; k++) {
        const name = names[(k + r) % names.length];
        const p = paths.get(name);
        const gw = p ? await startGateway(p[0], p[1], specs) : null;
        // Past start-up (the first packing, the model configs, the first memory caps).
        await sleep(2000);
        const g0 = gw ? schedstatMs(gw.pid) : 0;
        const w0 = schedstatMs(worker.child.pid);
        const t0 = performance.now();
        await sleep(windowMs);
        const s = (performance.now() - t0) / 1000;
        const gateway = gw ? (schedstatMs(gw.pid) - g0) / s : null;
        const workerCpu = (schedstatMs(worker.child.pid) - w0) / s;
        if (gw) {
          gw.kill('SIGTERM');
          await new Promise((res) => gw.once('exit', res));
        }
        rows.push({ round: r, name, gateway, worker: workerCpu });
        process.stderr.write(`round ${r} ${name}: gateway ${fmt(gateway, 2)} worker ${fmt(workerCpu, 2)} ms/s\n`);
      }
    }
  } finally {
    await worker.stop();
  }
  const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
  console.log('\n| path | gateway CPU ms/s (median) | per round | worker CPU ms/s (median) | per round |');
  console.log('|---|---|---|---|---|');
  for (const name of names) {
    const g = rows.filter((x) => x.name === name);
    const gw = g.map((x) => x.gateway);
    console.log(
      `| ${name} | ${name === 'none' ? '-' : fmt(med(gw), 2)} | ${name === 'none' ? '-' : gw.map((x) => fmt(x, 2)).join(', ')} | ${fmt(med(g.map((x) => x.worker)), 2)} | ${g.map((x) => fmt(x.worker, 2)).join(', ')} |`,
    );
  }
}

if (arg('serve', null) === null) await main();
