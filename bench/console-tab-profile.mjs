// bench/console-tab-profile: where one visible console tab's CPU goes. The real engine (mlp,
// fresh state) under perf_analyzer load (c=16, gRPC, so the feed carries what it carries in
// bench/console-tabs) and N Chromium pages on one screen. Over a window it prints, per page and
// per second: feed messages received, the renderer's task, script, style and layout time
// (Chromium's Performance domain), style recalcs and layouts, and from a trace of the window the
// frames the compositor drew and the paints; plus the browser's whole CPU (its process tree).
// Usage: npm run build && node bench/console-tab-profile.mjs [--screen /] [--pages 1]
//   [--seconds 10] [--no-load] [--dist DIR] [--trace out.json] [--js-profile]
// --dist serves another console build (e.g. one saved before a change) through a static front
// that passes /api (and the WebSocket) to the engine; without it the engine serves console/dist.
/* global fetch, localStorage */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { grpcLoadArgs, perfAnalyzerBinary, perfAnalyzerEnv } from '../e2e/dist/src/perf-analyzer.js';
import { startServer } from '../e2e/dist/src/server-process.js';
import { serveConsole } from '../e2e/console/static-server.mjs';
import { cpuSeconds } from './proc-cpu.mjs';
import { arg, fmt, machine } from './stats.mjs';

const screen = arg('screen', '/');
const pagesN = Number(arg('pages', '1'));
const seconds = Number(arg('seconds', '10'));
const load = !process.argv.includes('--no-load');
const dist = arg('dist', null);
const tracePath = arg('trace', null);
const jsProfile = process.argv.includes('--js-profile');

console.log(`# bench/console-tab-profile, machine: ${machine()}`);
console.log(
  `# screen ${screen}, ${pagesN} page(s), ${seconds} s window, load ${load ? 'c=16' : 'none'}, build ${dist ?? 'console/dist'}`,
);
const stateDir = mkdtempSync(join(tmpdir(), 'hloserve-tab-profile-'));
const server = await startServer({
  HLOSERVE_MODELS_INCLUDE: 'mlp',
  HLOSERVE_STATE_URL: `sqlite:${join(stateDir, 'state.sqlite')}`,
});
let perf = null;
let front = null;
let browser = null;
try {
  const setupToken = JSON.parse(server.logs.find((l) => l.includes('"setupToken"'))).setupToken;
  const engineUrl = `http://127.0.0.1:${server.ports.console}`;
  const r = await fetch(`${engineUrl}/api/v1/setup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ setupToken }),
  });
  const token = (await r.json()).data.token;
  if (dist) front = await serveConsole(engineUrl, dist);
  const url = front?.url ?? engineUrl;

  if (load) {
    // A long single window: the load only has to be there; its figures are bench/console-tabs'.
    perf = spawn(perfAnalyzerBinary(), [...grpcLoadArgs('mlp', server.grpcUrl(), 16), '-p', '600000', '-r', '1'], {
      stdio: ['ignore', 'ignore', 'inherit'],
      env: perfAnalyzerEnv(),
    });
  }

  const { chromium } = await import('playwright-core');
  browser = await chromium.launch({
    executablePath: process.env.HLOSERVE_TEST_CHROMIUM ?? '/usr/bin/chromium',
    args: ['--no-sandbox'],
  });
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  await context.addInitScript((t) => localStorage.setItem('hloserve.token', t), token);
  const pages = [];
  for (let i = 0; i < pagesN; i++) {
    const page = await context.newPage();
    const counter = { frames: 0, bytes: 0, byTopic: {} };
    page.on('websocket', (ws) =>
      ws.on('framereceived', (f) => {
        counter.frames++;
        const text = String(f.payload);
        counter.bytes += text.length;
        const topic = /"topic":"(\w+)"/.exec(text)?.[1] ?? /"type":"(\w+)"/.exec(text)?.[1] ?? '?';
        counter.byTopic[topic] = (counter.byTopic[topic] ?? 0) + 1;
      }),
    );
    await page.goto(url + screen);
    await page.locator('[data-testid="connection-banner"][data-state="live"]').waitFor({ timeout: 60_000 });
    const cdp = await context.newCDPSession(page);
    await cdp.send('Performance.enable', { timeDomain: 'threadTicks' });
    pages.push({ page, cdp, counter });
  }
  // Let the screens settle (lazy chunks, first snapshots, the charts' first draw).
  await new Promise((res) => setTimeout(res, 3000));

  const metrics = async (cdp) =>
    Object.fromEntries((await cdp.send('Performance.getMetrics')).metrics.map((m) => [m.name, m.value]));
  const before = await Promise.all(pages.map((p) => metrics(p.cdp)));
  const counts0 = pages.map((p) => ({ ...p.counter, byTopic: { ...p.counter.byTopic } }));
  // Chromium is this process's child; the engine, perf_analyzer and this process itself are not counted.
  const notBrowser = [server.child.pid, perf?.pid ?? -1];
  const browserCpu = () =>
    cpuSeconds(process.pid, notBrowser) - process.cpuUsage().user / 1e6 - process.cpuUsage().system / 1e6;
  const cpu0 = browserCpu();
  const engine0 = cpuSeconds(server.child.pid);
  if (tracePath)
    await browser.startTracing(pages[0].page, {
      path: tracePath,
      categories: [
        'devtools.timeline',
        'disabled-by-default-devtools.timeline',
        'disabled-by-default-devtools.timeline.frame',
        'toplevel',
        'cc',
        'gpu',
        'viz',
        'benchmark',
      ],
    });
  if (jsProfile) {
    await pages[0].cdp.send('Profiler.enable');
    await pages[0].cdp.send('Profiler.setSamplingInterval', { interval: 200 });
    await pages[0].cdp.send('Profiler.start');
  }
  const t0 = performance.now();
  await new Promise((res) => setTimeout(res, seconds * 1000));
  const wall = (performance.now() - t0) / 1000;
  const traceBuf = tracePath ? await browser.stopTracing() : null;
  const profile = jsProfile ? (await pages[0].cdp.send('Profiler.stop')).profile : null;
  const browserCores = (browserCpu() - cpu0) / wall;
  const engineCores = (cpuSeconds(server.child.pid) - engine0) / wall;
  const after = await Promise.all(pages.map((p) => metrics(p.cdp)));

  console.log(
    '\n| page | feed msgs/s | by topic (/s) | feed KB/s | task ms/s | script ms/s | style ms/s | layout ms/s | style recalcs/s | layouts/s |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|---|');
  pages.forEach((p, i) => {
    const d = (k) => (after[i][k] ?? 0) - (before[i][k] ?? 0);
    const frames = p.counter.frames - counts0[i].frames;
    const byTopic = Object.entries(p.counter.byTopic)
      .map(([k, v]) => `${k} ${fmt((v - (counts0[i].byTopic[k] ?? 0)) / wall, 1)}`)
      .join(', ');
    console.log(
      `| ${i} | ${fmt(frames / wall, 1)} | ${byTopic} | ${fmt((p.counter.bytes - counts0[i].bytes) / 1024 / wall, 2)} | ` +
        `${fmt((1000 * d('TaskDuration')) / wall, 1)} | ${fmt((1000 * d('ScriptDuration')) / wall, 1)} | ` +
        `${fmt((1000 * d('RecalcStyleDuration')) / wall, 1)} | ${fmt((1000 * d('LayoutDuration')) / wall, 1)} | ` +
        `${fmt(d('RecalcStyleCount') / wall, 1)} | ${fmt(d('LayoutCount') / wall, 1)} |`,
    );
  });
  console.log(
    `\nbrowser CPU ${fmt(browserCores, 3)} cores (${fmt((1000 * browserCores) / pagesN, 1)} ms/s per page); engine ${fmt(engineCores, 2)} cores`,
  );
  if (profile) {
    // Self time per function of page 0's main thread, from the sampling profiler.
    const self = new Map();
    const dt = new Map();
    for (let i = 0; i < profile.samples.length; i++)
      dt.set(profile.samples[i], (dt.get(profile.samples[i]) ?? 0) + (profile.timeDeltas[i + 1] ?? 0));
    for (const n of profile.nodes) {
      const f = n.callFrame;
      const name = `${f.functionName || '(anonymous)'} ${f.url.split('/').pop()}:${f.lineNumber + 1}`;
      self.set(name, (self.get(name) ?? 0) + (dt.get(n.id) ?? 0));
    }
    console.log(`\nJS self time of page 0 (ms/s):`);
    for (const [name, us] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 20))
      console.log(`  ${fmt(us / 1000 / wall, 2)}  ${name}`);
  }
  if (traceBuf) {
    writeFileSync(tracePath, traceBuf);
    const events = JSON.parse(traceBuf.toString()).traceEvents ?? JSON.parse(traceBuf.toString());
    const count = {};
    const dur = {};
    for (const e of events) {
      count[e.name] = (count[e.name] ?? 0) + 1;
      if (e.ph === 'X' && e.dur) dur[e.name] = (dur[e.name] ?? 0) + e.dur;
    }
    const names = [
      'DrawFrame',
      'BeginFrame',
      'Commit',
      'Paint',
      'UpdateLayoutTree',
      'Layout',
      'FunctionCall',
      'EventDispatch',
      'TimerFire',
      'FireAnimationFrame',
      'RunTask',
      'ParseHTML',
      'PrePaint',
      'Layerize',
    ];
    console.log(`\ntrace of page 0 (${tracePath}), per second:`);
    for (const n of names)
      if (count[n])
        console.log(`  ${n}: ${fmt(count[n] / wall, 1)}/s${dur[n] ? `, ${fmt(dur[n] / 1000 / wall, 2)} ms/s` : ''}`);
    const top = Object.entries(dur)
      .sort((a, b) => b[1] - a[1])
      .slice(0, 15)
      .map(([k, v]) => `${k} ${fmt(v / 1000 / wall, 2)}`);
    console.log(`  top durations (ms/s, nested events overlap): ${top.join('; ')}`);
  }
} finally {
  await browser?.close();
  perf?.kill('SIGKILL');
  await front?.close();
  await server.stop();
  rmSync(stateDir, { recursive: true, force: true });
}
