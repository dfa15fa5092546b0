// bench/feed-churn: what open consoles' live feeds cost the engine while a large repository churns.
// One server per checkout (`hloserve serve`, dynamic mode, the console on) over a catalog of
// --models small MLPs (e2e/src/catalog.ts, a weight budget of a tenth of them), eight HTTP callers
// spread over every model by Zipf(1) (most requests evict and load weights: hundreds of lifecycle
// events a second), and windows of --window-ms alternating between no feed open and --feeds feed
// clients subscribed to every topic (in a child process, so the clients' own parsing is charged
// to neither the server nor the callers). Per window: the server's CPU per request and requests
// per second; the feed's messages and bytes per second per client. Pairs each window with feeds
// to the window without beside it and prints the median of the differences with a bootstrap CI,
// and the server's main (JS) thread's CPU, where the feed's work runs.
// With --base, the other checkout's server runs in the same rounds (each round starts fresh
// servers, one build after the other). With --profile the servers run under --cpu-prof, and the
// time under the feed's own frames (its sampler, its fan-out, its snapshots) is printed per second
// that feeds were open: the feed's share of the main thread, whatever the load around it does
// (the profiler's overhead included).
// Usage: npm run build && node bench/feed-churn.mjs [--models 1000] [--feeds 4] [--windows 10]
//          [--window-ms 4000] [--rounds 2] [--base /path/to/other/checkout] [--dir DIR] [--profile]
/* global fetch */
import { fork } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeCatalog } from '../e2e/dist/src/catalog.js';
import { SERVER_NODE_FLAGS } from '../engine/dist/src/node-flags.js';
import { processCpuSeconds } from './proc-cpu.mjs';
import { startCatalogServer } from './catalog-server.mjs';
import { arg, bootstrap, fmt, machine, median, zipfCatalogPicker } from './stats.mjs';

const here = resolve(fileURLToPath(new URL('..', import.meta.url)));
const N = Number(arg('models', '1000'));
const feeds = Number(arg('feeds', '4'));
const windows = Number(arg('windows', '10'));
const windowMs = Number(arg('window-ms', '4000'));
const rounds = Number(arg('rounds', '2'));
const base = arg('base', null);
const profile = process.argv.includes('--profile');
const work = arg('dir', join(tmpdir(), `hloserve-catalog-idle-${N}`));
const repo = join(work, 'repo');
const TOPICS = ['models', 'residency', 'queues', 'events', 'metrics'];

async function main() {
  if (!existsSync(join(repo, `m${String(N - 1).padStart(2, '0')}`))) {
    rmSync(work, { recursive: true, force: true });
    writeCatalog(repo, N);
  }
  const builds = [{ name: 'this', root: here }, ...(base ? [{ name: 'base', root: resolve(base) }] : [])];
  console.log(
    `# feed-churn: ${N} models, Zipf over 8 callers, ${feeds} feeds against none, ${windows} windows of ` +
      `${windowMs} ms, ${rounds} rounds; ${machine()}`,
  );
  const results = new Map(builds.map((b) => [b.name, []]));
  const feedMs = new Map(builds.map((b) => [b.name, []]));
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? builds : [...builds].reverse();
    for (const b of order) {
      const { pairs, feedMsPerS } = await measure(b, round);
      results.get(b.name).push(...pairs);
      const prof = feedMsPerS === null ? '' : `; feed frames ${fmt(feedMsPerS, 1)} ms per second open`;
      if (feedMsPerS !== null) feedMs.get(b.name).push(feedMsPerS);
      console.log(`round ${round} ${b.name}: ${summary(pairs)}${prof}`);
    }
  }
  for (const [name, pairs] of results) {
    const ms = feedMs.get(name);
    const prof = ms.length ? `; feed frames ${ms.map((x) => fmt(x, 1)).join(', ')} ms per second open` : '';
    console.log(`all ${name}: ${summary(pairs)}${prof}`);
  }
}

function summary(pairs) {
  const d = (f) => pairs.map(f);
  const ci = (xs) => {
    const [lo, hi] = bootstrap(xs, median);
    return `${fmt(median(xs), 1)} (CI ${fmt(lo, 1)} to ${fmt(hi, 1)})`;
  };
  return (
    `${pairs.length} pairs; CPU per request without ${fmt(median(d((p) => p.without.cpuUs)), 1)} µs, ` +
    `with ${fmt(median(d((p) => p.with.cpuUs)), 1)} µs, added ${ci(d((p) => p.with.cpuUs - p.without.cpuUs))} µs; ` +
    `req/s without ${fmt(median(d((p) => p.without.perS)), 0)}, with ${fmt(median(d((p) => p.with.perS)), 0)}, ` +
    `ratio ${ci(d((p) => (p.with.perS / p.without.perS) * 100))} %; main thread ms/s without ` +
    `${fmt(median(d((p) => p.without.mainMsPerS)), 0)}, added ${ci(d((p) => p.with.mainMsPerS - p.without.mainMsPerS))}; per feed ` +
    `${fmt(median(d((p) => p.with.msgsPerS)), 0)} msgs/s, ${fmt(median(d((p) => p.with.kibPerS)), 1)} KiB/s; ` +
    `the clients' process ${fmt(median(d((p) => p.with.clientMsPerS)), 1)} ms/s; ` +
    `failed ${pairs.reduce((a, p) => a + p.with.failed + p.without.failed, 0)}`
  );
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Eight closed-loop callers, each request's model drawn by Zipf(1) over the catalog. */
function zipfLoad(http) {
  const pick = zipfCatalogPicker(N);
  const body = JSON.stringify({
    inputs: [{ name: 'x', shape: [1, 256], datatype: 'FP32', data: new Array(256).fill(0.5) }],
  });
  const state = { running: true, done: 0, failed: 0 };
  const callers = Array.from({ length: 8 }, async () => {
    while (state.running) {
      const r = await fetch(`${http}/v2/models/${pick()}/infer`, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json' },
      });
      await r.arrayBuffer();
      if (r.status === 200) state.done++;
      else state.failed++;
    }
  });
  return { state, stop: async () => ((state.running = false), await Promise.all(callers)) };
}

async function openFeeds(port, token) {
  const child = fork(fileURLToPath(import.meta.url), ['--feed-child', String(port), token, String(feeds)]);
  await new Promise((r) => child.once('message', r));
  const count = () =>
    new Promise((r) => {
      child.once('message', r);
      child.send('count');
    });
  const close = () => new Promise((r) => (child.once('exit', r), child.send('close')));
  return { count, close };
}

/** The feed's own frames (FeedHub, FeedClient, Topic): the outermost of them on each stack. */
const FEED_FRAMES = new Set(['sample', '#sampleNamed', '#fanOut', 'snapshotText', 'maybeRecover']);

/** ms under FEED_FRAMES in the bundle's code, in a .cpuprofile. */
function feedProfileMs(file) {
  const p = JSON.parse(readFileSync(file, 'utf8'));
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const memo = new Map();
  const underFeed = (id) => {
    if (memo.has(id)) return memo.get(id);
    const f = byId.get(id).callFrame;
    const hit =
      (FEED_FRAMES.has(f.functionName) && f.url.endsWith('cli.cjs')) || (parent.has(id) && underFeed(parent.get(id)));
    memo.set(id, hit);
    return hit;
  };
  let us = 0;
  for (let i = 0; i < p.samples.length; i++) if (underFeed(p.samples[i])) us += p.timeDeltas[i] ?? 0;
  return us / 1000;
}

async function measure(build, round) {
  const cache = join(work, `cache-feed-${build.name}`);
  mkdirSync(cache, { recursive: true });
  const profDir = join(work, `prof-${build.name}-${round}`);
  rmSync(profDir, { recursive: true, force: true });
  const flags = profile ? [...SERVER_NODE_FLAGS, '--cpu-prof', `--cpu-prof-dir=${profDir}`] : SERVER_NODE_FLAGS;
  const { s, http, token } = await startCatalogServer({ root: build.root, repo, models: N, cache, nodeFlags: flags });
  const pid = s.child.pid;
  const load = zipfLoad(http);
  // Every model touched once at least in the warm-up, so each window churns the same way.
  await sleep(Math.max(10_000, windowMs * 2));
  let feedOpenMs = 0;
  const window = async (withFeeds) => {
    const opened = performance.now();
    const f = withFeeds ? await openFeeds(s.ports.console, token) : null;
    let clientCpu0 = 0;
    if (f) {
      await sleep(1000); // the snapshots, then deltas only
      clientCpu0 = (await f.count()).cpuS;
    }
    const c0 = processCpuSeconds(pid);
    const d0 = load.state.done;
    const x0 = load.state.failed;
    const t0 = performance.now();
    await sleep(windowMs);
    const s_ = (performance.now() - t0) / 1000;
    const done = load.state.done - d0;
    const c1 = processCpuSeconds(pid);
    const cpu = c1.procCpuS - c0.procCpuS;
    const got = f ? await f.count() : { messages: 0, bytes: 0, cpuS: 0 };
    if (f) {
      await f.close();
      feedOpenMs += performance.now() - opened;
    }
    return {
      cpuUs: (cpu / done) * 1e6,
      mainMsPerS: ((c1.mainCpuS - c0.mainCpuS) / s_) * 1e3,
      perS: done / s_,
      failed: load.state.failed - x0,
      msgsPerS: got.messages / s_ / feeds,
      kibPerS: got.bytes / s_ / feeds / 1024,
      clientMsPerS: f ? ((got.cpuS - clientCpu0) / s_) * 1e3 : 0,
    };
  };
  const pairs = [];
  for (let i = 0; i < windows; i++) {
    // Alternate which half of the pair comes first, so a drift does not favour one side.
    const first = await window(i % 2 === 0);
    const second = await window(i % 2 !== 0);
    pairs.push(i % 2 === 0 ? { with: first, without: second } : { with: second, without: first });
  }
  await load.stop();
  await s.stop('SIGINT');
  if (!profile) return { pairs, feedMsPerS: null };
  const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
  return { pairs, feedMsPerS: feedProfileMs(join(profDir, file)) / (feedOpenMs / 1000) };
}

// The child: opens the feeds, counts what arrives, answers {messages, bytes} when asked.
if (process.argv[2] === '--feed-child') {
  const { default: WebSocket } = await import('ws');
  const [port, token, count] = process.argv.slice(3);
  let messages = 0;
  let bytes = 0;
  const sockets = await Promise.all(
    Array.from({ length: Number(count) }, async () => {
      const ws = new WebSocket(`ws://127.0.0.1:${port}/api/v1/stream`, ['hloserve.v1', `bearer.${token}`]);
      ws.on('message', (d) => {
        // What a console does with each message at least: parse it.
        JSON.parse(d.toString());
        messages++;
        bytes += d.length;
      });
      await new Promise((r) => ws.once('open', r));
      ws.send(JSON.stringify({ type: 'subscribe', topics: TOPICS }));
      return ws;
    }),
  );
  process.on('message', (m) => {
    if (m === 'count') {
      const cpu = process.cpuUsage();
      process.send({ messages, bytes, cpuS: (cpu.user + cpu.system) / 1e6 });
      messages = 0;
      bytes = 0;
    } else if (m === 'close') {
      for (const ws of sockets) ws.close();
      setTimeout(() => process.exit(0), 200);
    }
  });
  process.send('open');
} else {
  await main();
}
