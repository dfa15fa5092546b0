// bench/console-tabs: what the console open in 20 tabs costs inference. The real engine on the
// CPU plugin (mlp, fresh state) serves perf_analyzer at concurrency 16 over gRPC, in rounds that
// alternate without and with 20 Chromium pages (Debian's chromium, playwright-core) open on the
// console's live screens (overview, models, memory map, model detail, activity: 4 each; the last
// page, the one shown, the overview), all on the same machine. Per round: throughput, p50/p99, and the CPU seconds the engine and the
// browser used in the window; at the end the ratio of the medians (with / without).
// The pages live in a child process (perf_analyzer blocks this one while it measures).
// Usage: npm run build && nice -n 10 node bench/console-tabs.mjs [--rounds 4] [--window-ms 3000]
//   [--tabs 20] [--hidden] [--static [--tick]] [--before DIR]
// Headless Chromium shows every page, so by default all 20 render as if each were on screen. With
// --hidden all but the last report themselves hidden once live (visibilitychange), as background
// tabs of one window do; the console then drops their feed subscriptions.
// --static: each page, once live, is replaced by a copy of its own DOM without scripts (same
// stylesheets, the charts' canvases blank): what 20 shown pages cost Chromium when nothing on
// them changes, the floor under any live console. With --tick as well, one number on each copy
// (the banner's seq) changes once a second: the floor of a page that shows anything live at 1 Hz.
// --before DIR: a second engine and console from DIR, a built checkout of an earlier commit (its
// engine/dist, e2e/dist and console/dist): every round then measures both, each without and
// with its own console's tabs, so the two builds are compared side by side in one run.
/* global document, localStorage, Event, setInterval */
import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { grpcLoadArgs, runPerfAnalyzer } from '../e2e/dist/src/perf-analyzer.js';
import { startServer } from '../e2e/dist/src/server-process.js';
import { checkBackground, launchBackground } from './console-tabs-background.mjs';
import { routeConsoleFiles } from './console-files-route.mjs';
import { refuseWebSockets } from '../e2e/console/refused-socket.mjs';
import { startConsoleEngine } from './console-engine.mjs';
import { cpuSeconds } from './proc-cpu.mjs';
import { arg, fmt, machine } from './stats.mjs';

const SCREENS = ['/', '/models', '/memory', '/models/mlp', '/activity'];

// Child: open the tabs, say "ready" once every page is live, hold them until stdin closes.
if (process.argv[2] === '--tabs-child') {
  // mode (bench/console-tabs-decompose): 'console' (the default), 'none' (Chromium with no page),
  // 'blank' (about:blank pages), 'nofeed' (the console with its feed socket refused: every
  // WebSocket the page makes closes at once, so the console backs off and the engine holds none).
  // dist: another build's console/dist, served to the pages in place of the engine's own files (the
  // API and the feed still the engine's), so two consoles are compared against one engine.
  // kind: 'headless' (Playwright's launch: every page shown to Chromium, whatever the page is told)
  // or 'background' (./console-tabs-background.mjs: headful, on $DISPLAY, the pages tabs of one
  // window, all but the last really in the background).
  const [, , , url, token, n, hidden, frozen, parallel, mode = 'console', dist = '', kind = 'headless'] = process.argv;
  const { chromium } = await import('playwright-core');
  const executablePath = process.env.HLOSERVE_TEST_CHROMIUM ?? process.env.CHROMIUM ?? '/usr/bin/chromium';
  // Pages whose files come from a route have no address space of their own, and Chromium's
  // local-network checks would then refuse them the engine's loopback socket.
  const local = dist ? ['LocalNetworkAccessChecks'] : [];
  const background =
    kind === 'background' ? await launchBackground(chromium, executablePath, ['--no-sandbox'], local) : null;
  const args = ['--no-sandbox', ...local.map((f) => `--disable-features=${f}`)];
  const browser = background?.browser ?? (await chromium.launch({ executablePath, args }));
  const context = background?.context ?? (await browser.newContext({ viewport: { width: 1440, height: 900 } }));
  await context.addInitScript((t) => localStorage.setItem('hloserve.token', t), token);
  // The browser's live update interval (Settings), as openTabs' liveIntervalMs sets it.
  const interval = process.env.HLOSERVE_BENCH_LIVE_INTERVAL_MS;
  if (interval) await context.addInitScript((ms) => localStorage.setItem('hloserve.liveIntervalMs', ms), interval);
  if (dist) await routeConsoleFiles(context, url, () => dist);
  // A socket that never opens, as a refused connection does.
  if (mode === 'nofeed') await context.addInitScript(refuseWebSockets);
  const pages = [];
  // In parallel (bench/console-tabs-paired opens them every cycle): the pages' loads overlap.
  const open = async (i) => {
    const page = i === 0 && background ? background.firstPage : await context.newPage();
    if (mode === 'blank') {
      pages[i] = page;
      return;
    }
    // The last page is the one in front (--background) or the one left shown (--hidden): the
    // overview, the livest screen, whatever the count (session 27; before, the 20th was Activity's).
    await page.goto(url + SCREENS[(count - 1 - i) % SCREENS.length]);
    const state = mode === 'nofeed' ? 'reconnecting' : 'live';
    await page.locator(`[data-testid="connection-banner"][data-state="${state}"]`).waitFor({ timeout: 60_000 });
    if (frozen !== '0') {
      // The page's DOM as it stands, without its scripts, on a blank page (the feed socket goes with it).
      const html = await page.evaluate(() => {
        const doc = document.documentElement.cloneNode(true);
        for (const s of doc.querySelectorAll('script, link[rel="modulepreload"]')) s.remove();
        return doc.outerHTML;
      });
      await page.goto('about:blank');
      await page.setContent(html.replace('<head>', `<head><base href="${url}/">`));
      if (frozen === 'tick')
        // The least a live page can do: one number (the banner's seq) changes once a second.
        await page.evaluate(() => {
          const seq = document.querySelector('[data-testid="connection-banner"] .muted');
          let n = 0;
          setInterval(() => (seq.textContent = `seq ${++n}`), 1000);
        });
    }
    pages[i] = page;
  };
  const count = mode === 'none' ? 0 : Number(n);
  if (parallel === 'parallel') await Promise.all(Array.from({ length: count }, (_, i) => open(i)));
  else for (let i = 0; i < count; i++) await open(i);
  if (background) {
    // The last tab to the front: the others are then hidden to Chromium itself, no override.
    if (pages.length) await pages.at(-1).bringToFront();
    await checkBackground(pages);
  } else if (hidden === '1') {
    for (const page of pages.slice(0, -1)) {
      await page.evaluate(() => {
        Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => 'hidden' });
        Object.defineProperty(document, 'hidden', { configurable: true, get: () => true });
        document.dispatchEvent(new Event('visibilitychange'));
      });
    }
  }
  // What the pages ask of the engine once all are live (REST calls; feed sockets opened), said at exit.
  const asked = { requests: 0, sockets: 0, since: performance.now() };
  for (const page of pages) {
    page.on('request', (r) => r.url().startsWith(`${url}/api/`) && asked.requests++);
    page.on('websocket', () => asked.sockets++);
  }
  process.stdout.write('ready\n');
  process.stdin.resume();
  process.stdin.once('end', async () => {
    const s = (performance.now() - asked.since) / 1000;
    if (process.env.HLOSERVE_TABS_REQUESTS)
      process.stderr.write(
        `# tabs child: ${asked.requests} API requests (${(asked.requests / s).toFixed(2)}/s) and ${asked.sockets} new sockets in ${s.toFixed(1)} s after ready\n`,
      );
    await (background ? background.close() : browser.close());
    process.exit(0);
  });
} else {
  await main();
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

async function main() {
  const rounds = Number(arg('rounds', '4'));
  const windowMs = arg('window-ms', '3000');
  const tabs = Number(arg('tabs', '20'));
  const hidden = process.argv.includes('--hidden');
  const frozen = process.argv.includes('--static');
  const tick = process.argv.includes('--tick');
  const beforeDir = arg('before', null);
  console.log(`# bench/console-tabs, machine: ${machine()}`);
  const engines = [];
  try {
    engines.push(await startConsoleEngine(startServer, beforeDir ? 'after' : 'engine'));
    if (beforeDir) {
      const { startServer: startBefore } = await import(
        pathToFileURL(join(resolve(beforeDir), 'e2e', 'dist', 'src', 'server-process.js')).href
      );
      engines.push(await startConsoleEngine(startBefore, 'before'));
    }

    const perf = async (e) => {
      const args = grpcLoadArgs('mlp', e.server.grpcUrl(), 16);
      const t0 = performance.now();
      const engine0 = cpuSeconds(e.server.child.pid);
      const p = await runPerfAnalyzer([...args, '-p', windowMs, '-s', '100', '-r', '10']);
      if (p.status !== 0) throw new Error(`perf_analyzer failed:\n${p.output}`);
      const seconds = (performance.now() - t0) / 1000;
      return { ...p.rows.get(16), engineCpu: (cpuSeconds(e.server.child.pid) - engine0) / seconds, seconds };
    };
    const openTabs = (e) =>
      new Promise((resolve_, reject) => {
        const argv = [
          import.meta.filename,
          '--tabs-child',
          e.consoleUrl,
          e.token,
          String(tabs),
          hidden ? '1' : '0',
          frozen ? (tick ? 'tick' : '1') : '0',
        ];
        const child = spawn(process.execPath, argv, { stdio: ['pipe', 'pipe', 'inherit'] });
        child.stdout.on('data', (d) => String(d).includes('ready') && resolve_(child));
        child.once('exit', (code) => reject(new Error(`tabs child exited ${code} before ready`)));
      });

    const rows = [];
    console.log(
      `\n| round | engine | tabs | infer/s (c=16, mlp, gRPC) | p50 µs | p99 µs | engine CPU (cores) | engine CPU µs/infer | browser CPU (cores) |`,
    );
    console.log('|---|---|---|---|---|---|---|---|---|');
    const print = (round, x) =>
      console.log(
        `| ${round} | ${x.engine} | ${x.tabs} | ${fmt(x.throughput)} | ${x.p50} | ${x.p99} | ${fmt(x.engineCpu, 2)} | ${fmt((1e6 * x.engineCpu) / x.throughput, 0)} | ${fmt(x.browserCpu, 2)} |`,
      );
    for (const e of engines) await perf(e); // warm: compiled sizes, learned costs, the first feed samples
    for (let i = 1; i <= rounds; i++) {
      // Alternate which build goes first, so a drift over the round does not favour one.
      for (const e of i % 2 ? engines : [...engines].reverse()) {
        rows.push({ engine: e.label, tabs: 0, ...(await perf(e)), browserCpu: 0 });
        print(i, rows.at(-1));
        const child = await openTabs(e);
        const b0 = cpuSeconds(child.pid);
        const t0 = performance.now();
        const p = await perf(e);
        const browserCpu = (cpuSeconds(child.pid) - b0) / ((performance.now() - t0) / 1000);
        rows.push({ engine: e.label, tabs, ...p, browserCpu });
        print(i, rows.at(-1));
        child.stdin.end();
        await new Promise((res) => child.once('exit', res));
      }
    }
    for (const e of engines) {
      const mine = rows.filter((x) => x.engine === e.label);
      const without = mine.filter((x) => x.tabs === 0).map((x) => x.throughput);
      const withTabs = mine.filter((x) => x.tabs > 0).map((x) => x.throughput);
      // Each with-tabs round against its own round's without-tabs figure (measured just before).
      const paired = withTabs.map((w, k) => w / without[k]);
      const perInfer = (t) =>
        median(mine.filter((x) => x.tabs > 0 === t).map((x) => (1e6 * x.engineCpu) / x.throughput));
      const browser = mine.filter((x) => x.tabs > 0).map((x) => x.browserCpu);
      console.log(
        `\n${e.label}: median infer/s without ${fmt(median(without))}, with ${tabs} tabs ${fmt(median(withTabs))}: ` +
          `ratio ${fmt(median(withTabs) / median(without), 3)} (cost ${fmt(100 * (1 - median(withTabs) / median(without)))} %); ` +
          `paired ratios ${paired.map((x) => fmt(x, 3)).join(', ')} (median ${fmt(median(paired), 3)})` +
          `${hidden ? ' (all but one page hidden)' : ''}${frozen ? (tick ? ' (static copies, one number changing each second)' : ' (static copies, no script)') : ''}`,
      );
      // The engine's own CPU per inference: what the console's API and feed add on the server side,
      // apart from the browser taking the machine's cores.
      console.log(
        `${e.label}: engine CPU per inference without ${fmt(perInfer(false), 0)} µs, with tabs ${fmt(perInfer(true), 0)} µs ` +
          `(ratio ${fmt(perInfer(true) / perInfer(false), 3)}); browser ${fmt(Math.min(...browser), 2)}-${fmt(Math.max(...browser), 2)} cores (median ${fmt(median(browser), 3)})`,
      );
    }
  } finally {
    for (const e of engines) await e.stop();
  }
}
