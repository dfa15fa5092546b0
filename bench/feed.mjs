// bench/feed: what the control API costs. (1) Inference throughput at concurrency 16
// (perf_analyzer, gRPC, the MLP) with 0 and with 20 live-feed clients (in their own process,
// reading) subscribed to every topic, alternated twice to show the machine's own noise;
// (2) upload throughput: 1 GiB sent in 16 MiB chunks to PATCH /api/v1/uploads/:id (transfer to
// staging only; the upload is then cancelled).
// Usage: npm run build && node bench/feed.mjs [--window-ms 3000] [--upload-mib 1024]
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { grpcLoadArgs, runPerfAnalyzer } from '../e2e/dist/src/perf-analyzer.js';
import { startServer } from '../e2e/dist/src/server-process.js';
import { arg, fmt, machine } from './stats.mjs';

const { fetch } = globalThis;
const windowMs = arg('window-ms', '3000');
const uploadMiB = Number(arg('upload-mib', '1024'));

// Child process: n clients subscribed to every topic, reading for `seconds`, then a JSON count.
const FEED_CLIENTS = `
import { WebSocket } from 'ws';
const [port, token, n, seconds] = process.argv.slice(1);
let messages = 0, resyncs = 0;
const sockets = [];
for (let i = 0; i < Number(n); i++) {
  const ws = new WebSocket('ws://127.0.0.1:' + port + '/api/v1/stream', ['hloserve.v1', 'bearer.' + token]);
  ws.on('message', (d) => { messages++; if (String(d).includes('"resync"')) resyncs++; });
  ws.once('open', () => ws.send(JSON.stringify({ type: 'subscribe', topics: ['models', 'residency', 'queues', 'events', 'metrics'] })));
  sockets.push(ws);
}
const t0 = Date.now();
setTimeout(() => {
  process.stdout.write(JSON.stringify({ messages, resyncs, seconds: (Date.now() - t0) / 1000 }));
  for (const s of sockets) s.terminate();
  process.exit(0);
}, Number(seconds) * 1000);
`;

console.log(`# bench/feed, machine: ${machine()}`);
const stateDir = mkdtempSync(join(tmpdir(), 'hloserve-feed-bench-'));
const server = await startServer({
  HLOSERVE_MODELS_INCLUDE: 'mlp',
  HLOSERVE_STATE_URL: `sqlite:${join(stateDir, 'state.sqlite')}`,
});
try {
  const setupLine = server.logs.find((l) => l.includes('"setupToken"'));
  const setupToken = setupLine ? JSON.parse(setupLine).setupToken : null;
  if (!setupToken) throw new Error('no setup token in the log (state not fresh?)');
  const base = `http://127.0.0.1:${server.ports.console}/api/v1`;
  const post = async (path, body, token) => {
    const r = await fetch(base + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    });
    if (!r.ok) throw new Error(`${path}: ${r.status} ${await r.text()}`);
    return (await r.json()).data;
  };
  const admin = (await post('/setup', { setupToken })).token;
  const viewer = (await post('/tokens', { name: 'bench', scope: 'viewer' }, admin)).token;
  const operator = (await post('/tokens', { name: 'bench', scope: 'operator' }, admin)).token;

  const perf = async () => {
    const args = grpcLoadArgs('mlp', server.grpcUrl(), 16);
    const r = await runPerfAnalyzer([...args, '-p', windowMs, '-s', '100', '-r', '10']);
    if (r.status !== 0) throw new Error(`perf_analyzer failed:\n${r.output}`);
    return r.rows.get(16);
  };
  // perf_analyzer blocks this process while it measures, so the feed clients run in another.
  const feedClients = (n, seconds) =>
    new Promise((resolve, reject) => {
      const argv = ['--input-type=module', '-e', FEED_CLIENTS, String(server.ports.console), viewer, String(n)];
      const child = spawn(process.execPath, [...argv, String(seconds)], { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      child.stdout.on('data', (d) => (out += d));
      child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`feed exited ${code}`))));
    });

  const rows = [];
  await perf(); // warm
  for (const clients of [0, 20, 0, 20]) {
    if (clients === 0) {
      rows.push({ clients, ...(await perf()), rate: 0, resyncs: 0 });
      continue;
    }
    const feed = feedClients(clients, (Number(windowMs) / 1000) * 14);
    await new Promise((r) => setTimeout(r, 1500));
    const p = await perf();
    const f = await feed;
    rows.push({ clients, ...p, rate: f.messages / f.seconds, resyncs: f.resyncs });
  }
  console.log(
    '\n| feed clients | throughput infer/s (c=16, mlp, gRPC) | p50 µs | p99 µs | feed msgs/s (all) | resyncs |',
  );
  console.log('|---|---|---|---|---|---|');
  for (const r of rows)
    console.log(`| ${r.clients} | ${fmt(r.throughput)} | ${r.p50} | ${r.p99} | ${fmt(r.rate)} | ${r.resyncs} |`);

  const size = uploadMiB * 1024 * 1024;
  const chunk = Buffer.alloc(16 * 1024 * 1024, 0x5a);
  const up = await post('/uploads', { filename: 'bench.tar', model: 'bench', sizeBytes: size }, operator);
  const auth = { authorization: `Bearer ${operator}` };
  const t0 = process.hrtime.bigint();
  for (let at = 0; at < size; at += chunk.length) {
    const r = await fetch(`${base}/uploads/${up.id}`, {
      method: 'PATCH',
      headers: { ...auth, 'content-type': 'application/offset+octet-stream', 'upload-offset': String(at) },
      body: chunk.subarray(0, Math.min(chunk.length, size - at)),
    });
    if (!r.ok) throw new Error(`chunk at ${at}: ${r.status} ${await r.text()}`);
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  await fetch(`${base}/uploads/${up.id}`, { method: 'DELETE', headers: auth });
  console.log(`\n| upload | size | chunk | seconds | MB/s |\n|---|---|---|---|---|`);
  console.log(
    `| PATCH to staging (fsync per chunk) | ${uploadMiB} MiB | 16 MiB | ${fmt(seconds, 2)} | ${fmt(size / 1e6 / seconds)} |`,
  );
} finally {
  await server.stop();
  rmSync(stateDir, { recursive: true, force: true });
}
