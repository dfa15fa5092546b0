// bench/catalog-idle: what a large model repository costs the server when little or nothing is
// asked of it. The whole server (`hloserve serve`, dynamic mode, the console on) over a catalog of
// --models small MLPs (e2e/src/catalog.ts, 0.5 MB of weights each, a budget of a tenth of them),
// and per phase of --seconds: the server's CPU with no client at all; one caller's latency on one
// model (what the serving thread's periodic work adds to a request is its tail); the same with a
// console's live feed subscribed to every topic (its bytes per second by topic); eight callers
// spread over every model by Zipf(1) (most models cold: the budget churns), without and with a
// feed open; one caller again while /metrics is scraped each second.
// Then the control routes' times and sizes, and the log's warnings. With --base, the same for another checkout, the two alternating per round.
// Usage: npm run build && node bench/catalog-idle.mjs [--models 1000] [--seconds 20] [--rounds 2]
//          [--base /path/to/other/checkout]
/* global fetch */
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { writeCatalog } from '../e2e/dist/src/catalog.js';
import { startCatalogServer } from './catalog-server.mjs';
import { processCpuSeconds } from './proc-cpu.mjs';
import { arg, fmt, machine, summarize, zipfCatalogPicker } from './stats.mjs';

const here = resolve(fileURLToPath(new URL('..', import.meta.url)));
const N = Number(arg('models', '1000'));
const seconds = Number(arg('seconds', '20'));
const rounds = Number(arg('rounds', '2'));
const base = arg('base', null);
const work = arg('dir', join(tmpdir(), `hloserve-catalog-idle-${N}`));
const repo = join(work, 'repo');
if (!existsSync(join(repo, `m${String(N - 1).padStart(2, '0')}`))) {
  rmSync(work, { recursive: true, force: true });
  writeCatalog(repo, N);
}
const builds = [{ name: 'this', root: here }, ...(base ? [{ name: 'base', root: resolve(base) }] : [])];
const TOPICS = ['models', 'residency', 'queues', 'events', 'metrics'];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const cpuSeconds = (pid) => processCpuSeconds(pid).procCpuS;
const rssMiB = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;

/** `callers` closed-loop callers for `ms`, each request to the model `pick()` names. */
async function callLoop(http, ms, callers, pick) {
  const body = JSON.stringify({
    inputs: [{ name: 'x', shape: [1, 256], datatype: 'FP32', data: new Array(256).fill(0.5) }],
  });
  const samples = [];
  let failed = 0;
  const end = performance.now() + ms;
  await Promise.all(
    Array.from({ length: callers }, async () => {
      while (performance.now() < end) {
        const t = performance.now();
        const r = await fetch(`${http}/v2/models/${pick()}/infer`, {
          method: 'POST',
          body,
          headers: { 'content-type': 'application/json' },
        });
        await r.arrayBuffer();
        if (r.status === 200) samples.push((performance.now() - t) * 1e3);
        else failed++;
      }
    }),
  );
  return { ...summarize(samples), failed, perS: samples.length / (ms / 1000) };
}

const oneCaller = (http, ms) => callLoop(http, ms, 1, () => 'm00');

/** Eight callers, each request's model drawn by Zipf(1) over the catalog (a fixed seed). */
function zipf(http, ms) {
  return callLoop(http, ms, 8, zipfCatalogPicker(N));
}

/** A feed client subscribed to every topic, counting the bytes it receives per topic. */
async function openFeed(port, token) {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/api/v1/stream`, ['hloserve.v1', `bearer.${token}`]);
  let bytes = {};
  ws.on('message', (d) => {
    const topic = /^\{"topic":"([a-z]+)"/.exec(d.subarray(0, 40).toString())?.[1] ?? 'other';
    bytes[topic] = (bytes[topic] ?? 0) + d.length;
  });
  await new Promise((r) => ws.once('open', r));
  ws.send(JSON.stringify({ type: 'subscribe', topics: TOPICS }));
  return {
    reset: () => (bytes = {}),
    perS: (s) => Object.fromEntries(Object.entries(bytes).map(([t, b]) => [t, b / s])),
    close: () => ws.close(),
  };
}

const kib = (perTopic) => {
  const total = Object.values(perTopic).reduce((a, b) => a + b, 0);
  const parts = Object.entries(perTopic).map(([t, b]) => `${t} ${fmt(b / 1024, 1)}`);
  return `${fmt(total / 1024, 0)} KiB/s (${parts.join(', ')})`;
};

async function measure(build) {
  const cache = join(work, `cache-${build.name}`);
  mkdirSync(cache, { recursive: true });
  const t0 = performance.now();
  const { s, http, token } = await startCatalogServer({ root: build.root, repo, models: N, cache });
  const readyS = (performance.now() - t0) / 1e3;
  const pid = s.child.pid;
  const console_ = `http://127.0.0.1:${s.ports.console}`;
  await sleep(5000);
  const out = { readyS };
  let c = cpuSeconds(pid);
  await sleep(seconds * 1000);
  out.idleCpu = (cpuSeconds(pid) - c) / seconds;
  c = cpuSeconds(pid);
  out.alone = await oneCaller(http, seconds * 1000);
  out.aloneCpu = (cpuSeconds(pid) - c) / seconds;
  let ws = await openFeed(s.ports.console, token);
  await sleep(2000);
  ws.reset();
  c = cpuSeconds(pid);
  await sleep(seconds * 1000);
  out.feedIdleCpu = (cpuSeconds(pid) - c) / seconds;
  out.feedBytesPerS = ws.perS(seconds);
  c = cpuSeconds(pid);
  out.feed = await oneCaller(http, seconds * 1000);
  out.feedCpu = (cpuSeconds(pid) - c) / seconds;
  ws.close();
  const auth = { authorization: `Bearer ${token}` };
  const route = async (url, headers) => {
    const times = [];
    let bytes = 0;
    for (let i = 0; i < 5; i++) {
      const t = performance.now();
      const r = await fetch(url, { headers });
      bytes = (await r.arrayBuffer()).byteLength;
      times.push(performance.now() - t);
    }
    times.sort((a, b) => a - b);
    return { ms: times[2], bytes };
  };
  // Zipf(1) over every model from 8 callers: most models cold, the weight budget churning.
  const lastSeq = async () => {
    let after = 0;
    for (;;) {
      const r = await fetch(`${console_}/api/v1/events?limit=1000&afterSeq=${after}`, { headers: auth });
      const { data } = await r.json();
      if (data.length === 0) return after;
      after = data[data.length - 1].seq;
    }
  };
  const seq0 = await lastSeq();
  out.zipf = await zipf(http, seconds * 1000);
  out.zipfEventsPerS = ((await lastSeq()) - seq0) / seconds;
  // The same load with a console's feed open: what the feed sends while every model is busy.
  ws = await openFeed(s.ports.console, token);
  await sleep(2000);
  ws.reset();
  out.zipfFeed = await zipf(http, seconds * 1000);
  out.zipfFeedBytesPerS = ws.perS(seconds);
  ws.close();
  // One caller again, with /metrics scraped once a second beside it (after the Zipf phase every
  // model has its series): what a scrape holds the serving thread for is the caller's tail.
  {
    let scraping = true;
    const scrapes = [];
    const scraper = (async () => {
      while (scraping) {
        const t = performance.now();
        await (await fetch(`http://127.0.0.1:${s.ports.metrics}/metrics`)).arrayBuffer();
        scrapes.push(performance.now() - t);
        await sleep(1000);
      }
    })();
    out.scraped = await oneCaller(http, seconds * 1000);
    scraping = false;
    await scraper;
    out.scrapeMs = scrapes.sort((a, b) => a - b)[scrapes.length >> 1];
  }
  out.models = await route(`${console_}/api/v1/models`, auth);
  out.metrics = await route(`http://127.0.0.1:${s.ports.metrics}/metrics`, {});
  out.rssMiB = rssMiB(pid);
  await s.stop();
  out.warnings = {};
  for (const l of s.logs) {
    const m = /"level":"(?:warn|error)".*?"msg":"([^"]*)"/.exec(l);
    if (m && !m[1].startsWith('console setup')) out.warnings[m[1]] = (out.warnings[m[1]] ?? 0) + 1;
  }
  return out;
}

console.log(`# catalog-idle: ${N} models, ${seconds} s per phase, ${rounds} rounds; ${machine()}`);
const results = new Map(builds.map((b) => [b.name, []]));
for (let round = 0; round < rounds; round++) {
  const order = round % 2 === 0 ? builds : [...builds].reverse();
  for (const b of order) {
    const r = await measure(b);
    results.get(b.name).push(r);
    const us = (x) => `${fmt(x.p50, 0)} / ${fmt(x.p99, 0)} / ${fmt(x.max, 0)}`;
    console.log(
      `round ${round} ${b.name}: ready ${fmt(r.readyS, 1)} s; idle CPU ${fmt(r.idleCpu * 100, 1)} %; ` +
        `one caller p50/p99/max ${us(r.alone)} µs (CPU ${fmt(r.aloneCpu * 100, 0)} %, failed ${r.alone.failed}); ` +
        `feed open: idle CPU ${fmt(r.feedIdleCpu * 100, 1)} %, ${kib(r.feedBytesPerS)}, one caller ${us(r.feed)} µs (CPU ${fmt(r.feedCpu * 100, 0)} %, failed ${r.feed.failed}); ` +
        `Zipf, 8 callers: ${fmt(r.zipf.perS, 0)}/s, p50/p99/max ${us(r.zipf)} µs, failed ${r.zipf.failed}, ${fmt(r.zipfEventsPerS, 0)} events/s; ` +
        `Zipf with a feed open: ${fmt(r.zipfFeed.perS, 0)}/s, p50/p99/max ${us(r.zipfFeed)} µs, failed ${r.zipfFeed.failed}, feed ${kib(r.zipfFeedBytesPerS)}; ` +
        `one caller, /metrics scraped each second: ${us(r.scraped)} µs (scrape ${fmt(r.scrapeMs, 0)} ms); ` +
        `GET /api/v1/models ${fmt(r.models.ms, 1)} ms ${fmt(r.models.bytes / 1024, 0)} KiB; /metrics ${fmt(r.metrics.ms, 1)} ms ${fmt(r.metrics.bytes / 1024, 0)} KiB; ` +
        `RSS ${fmt(r.rssMiB, 0)} MiB; warnings ${JSON.stringify(r.warnings)}`,
    );
  }
}
