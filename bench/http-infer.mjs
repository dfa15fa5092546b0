// bench/http-infer: KServe V2 JSON infer over HTTP/1.1 (keep-alive), the mlp example, at one
// caller and at eight, for one or more checkouts side by side. `hloserve serve` runs from every
// checkout at once over examples/models (idle but for the one being measured), and short windows
// of load go to each in turn, the order alternating, so that this VM's drift (20-30 % within
// minutes) falls on both alike: per window, requests/s, p50/p99 and the server's CPU time per
// request (from /proc). The first checkout is compared with each other one window by window.
// Usage: npm run build && node bench/http-infer.mjs [CHECKOUT ...] [--rounds 4] [--windows 20]
//          [--window-ms 1000]
import http from 'node:http';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { examplesDir, startServer } from '../e2e/dist/src/server-process.js';
import { processCpuSeconds } from './proc-cpu.mjs';
import { arg, bootstrap, fmt, machine, median, summarize } from './stats.mjs';

const here = resolve(fileURLToPath(new URL('..', import.meta.url)));
const windowMs = Number(arg('window-ms', '1000'));
const windowsPerPoint = Number(arg('windows', '20'));
const rounds = Number(arg('rounds', '4'));
const roots = process.argv.slice(2).filter((a, i, all) => !a.startsWith('--') && !all[i - 1]?.startsWith('--'));
const checkouts = (roots.length > 0 ? roots : [here]).map((r) => resolve(r));
const cpuSeconds = (pid) => processCpuSeconds(pid).procCpuS;
const body = JSON.stringify({
  inputs: [{ name: 'x', shape: [1, 784], datatype: 'FP32', data: Array.from({ length: 784 }, (_, i) => (i % 7) / 7) }],
});

/** `callers` closed-loop callers on keep-alive connections for `ms`. */
async function load(port, callers, ms) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: callers });
  const one = () =>
    new Promise((done, fail) => {
      const req = http.request(
        {
          host: '127.0.0.1',
          port,
          path: '/v2/models/mlp/infer',
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        },
        (res) => {
          res.resume();
          res.on('end', () => (res.statusCode === 200 ? done() : fail(new Error(`HTTP ${res.statusCode}`))));
        },
      );
      req.on('error', fail);
      req.end(body);
    });
  const samples = [];
  const end = performance.now() + ms;
  await Promise.all(
    Array.from({ length: callers }, async () => {
      while (performance.now() < end) {
        const t = performance.now();
        await one();
        samples.push((performance.now() - t) * 1e3);
      }
    }),
  );
  agent.destroy();
  return { ...summarize(samples), n: samples.length };
}

/** Per window: each checkout's server in turn (the order alternating), one load each. */
async function windows(servers, callers) {
  const rows = servers.map(() => []);
  for (let w = 0; w < windowsPerPoint; w++) {
    const order = w % 2 === 0 ? servers.map((_, k) => k) : servers.map((_, k) => servers.length - 1 - k);
    for (const k of order) {
      const s = servers[k];
      const cpu0 = cpuSeconds(s.child.pid);
      const r = await load(s.ports.http, callers, windowMs);
      rows[k].push({ ...r, perS: r.n / (windowMs / 1000), cpuUs: ((cpuSeconds(s.child.pid) - cpu0) / r.n) * 1e6 });
    }
  }
  return rows;
}

console.log(
  `# http-infer: mlp, JSON, ${rounds} rounds of ${windowsPerPoint} windows of ${windowMs} ms per checkout and concurrency; ${machine()}`,
);
// Each round starts the servers afresh, in a rotated order: one process can run a few percent
// slower than another of the same build for the whole of its life (its heap, its JIT), which
// windows alone do not cancel.
const pooled = { 1: checkouts.map(() => []), 8: checkouts.map(() => []) };
for (let round = 0; round < rounds; round++) {
  const order = checkouts.map((_, i) => (i + round) % checkouts.length);
  const servers = new Array(checkouts.length);
  for (const k of order) {
    const cli = join(checkouts[k], 'engine/dist/bundle/cli.js');
    servers[k] = await startServer({ HLOSERVE_MODEL_REPO: examplesDir }, 300_000, [], cli);
    await load(servers[k].ports.http, 8, 2000);
  }
  try {
    for (const c of [1, 8]) (await windows(servers, c)).forEach((rows, k) => pooled[c][k].push(...rows));
  } finally {
    for (const s of servers) await s.stop();
  }
}
for (const c of [1, 8]) {
  const rows = pooled[c];
  checkouts.forEach((root, k) => {
    const m = (key) => fmt(median(rows[k].map((r) => r[key])), 0);
    console.log(
      `c=${c} ${root}: ${m('perS')}/s, p50 ${m('p50')} µs, p99 ${m('p99')} µs, server CPU ${m('cpuUs')} µs/req (medians of windows)`,
    );
  });
  for (let k = 1; k < checkouts.length; k++) {
    const diff = rows[0].map((r, w) => r.cpuUs - rows[k][w].cpuUs);
    const p50 = rows[0].map((r, w) => r.p50 - rows[k][w].p50);
    const [lo, hi] = bootstrap(diff, median);
    const [plo, phi] = bootstrap(p50, median);
    console.log(
      `c=${c} ${checkouts[0]} - ${checkouts[k]}, paired by window: server CPU ${fmt(median(diff), 1)} µs/req ` +
        `(95 % CI ${fmt(lo, 1)} to ${fmt(hi, 1)}), p50 ${fmt(median(p50), 1)} µs (${fmt(plo, 1)} to ${fmt(phi, 1)})`,
    );
  }
}
