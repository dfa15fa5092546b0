// bench/console-shown-page: what one shown console page costs the browser, by process, with two
// console builds side by side. The engine (mlp, CPU plugin) serves one perf_analyzer (c=16, gRPC)
// throughout, so the feed carries what it carries under load; one headful Chromium on a virtual
// display (Xvfb) shows one page (the screen of --screen, the overview by default). Each cycle
// loads the page from each build in a drawn order (the files through a route, the API and feed the
// engine's own), lets it settle, and reads per window from /proc the CPU (cores) and wake-ups
// (voluntary switches a second) of each Chromium process type, and from the page the DOM mutation
// batches a second (each one a frame the page asks for). The report is the median per build.
// It measures the browser, not inference: bench/console-tabs-paired is the budget's bench.
// Usage: npm run build && nice -n 10 node bench/console-shown-page.mjs --base DIR [--cycles 6]
//   [--window-ms 6000] [--settle-ms 2500] [--screen /]
//   DIR: another built checkout (its console/dist); without --base both arms are this build
//   (the spread that gives is what the method resolves).
// Needs Xvfb (`apt-get install xvfb`), as --background of console-tabs-paired.
/* global document, localStorage, MutationObserver, window */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { chromium } from 'playwright-core';
import { startServer } from '../e2e/dist/src/server-process.js';
import { startConsoleEngine } from './console-engine.mjs';
import { routeConsoleFiles } from './console-files-route.mjs';
import { launchBackground } from './console-tabs-background.mjs';
import { procTable, threads, treePids } from './proc-cpu.mjs';
import { sleep, startDisplay, startLoad } from './console-tabs-window.mjs';
import { arg, fmt, machine, median } from './stats.mjs';

const cycles = Number(arg('cycles', '6'));
const windowMs = Number(arg('window-ms', '6000'));
const settleMs = Number(arg('settle-ms', '2500'));
const screen = arg('screen', '/');
const thisDist = join(import.meta.dirname, '..', 'console', 'dist');
const builds = { this: thisDist, base: arg('base', null) ? join(resolve(arg('base')), 'console', 'dist') : thisDist };

/** Run time (s) and voluntary switches of the processes under `root` (Chromium), summed per process type. */
function chromiumByType(root) {
  const out = new Map();
  const kindOf = new Map();
  for (const pid of treePids(procTable(), root)) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      const type = /--type=([a-z-]+)/.exec(cmd)?.[1] ?? 'browser';
      kindOf.set(pid, type === 'utility' && /--utility-sub-type=network/.test(cmd) ? 'network' : type);
    } catch {
      /* a process that ended */
    }
  }
  for (const [key, t] of threads([...kindOf.keys()])) {
    const kind = kindOf.get(Number(key.slice(0, key.indexOf('/'))));
    const o = out.get(kind) ?? { run: 0, vol: 0 };
    o.run += t.run / 1e9;
    o.vol += t.vol;
    out.set(kind, o);
  }
  return out;
}

const KINDS = ['renderer', 'gpu-process', 'browser', 'network'];

async function main() {
  console.log(`# bench/console-shown-page, machine: ${machine()}`);
  console.log(
    `# ${cycles} cycles, screen ${screen}; base ${builds.base}; windows ${windowMs} ms, settle ${settleMs} ms`,
  );
  const display = await startDisplay();
  process.env.DISPLAY = display.display;
  const e = await startConsoleEngine(startServer);
  const load = startLoad(e);
  // The pages' files come through a route (./console-files-route.mjs): local-network checks off.
  const executablePath = process.env.HLOSERVE_TEST_CHROMIUM ?? process.env.CHROMIUM ?? '/usr/bin/chromium';
  const bg = await launchBackground(chromium, executablePath, ['--no-sandbox'], ['LocalNetworkAccessChecks']);
  const rows = [];
  try {
    await bg.context.addInitScript((t) => localStorage.setItem('hloserve.token', t), e.token);
    let dist = builds.this;
    await routeConsoleFiles(bg.context, e.consoleUrl, () => dist);
    const page = bg.firstPage;
    let seed = Number(arg('seed', '1'));
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    await sleep(10_000); // the generator's ramp
    console.log(
      `\n| cycle | build | ${KINDS.map((k) => `${k} cores`).join(' | ')} | total cores | wake-ups/s | mutation batches/s |`,
    );
    console.log(`|${'---|'.repeat(KINDS.length + 5)}`);
    for (let i = 0; i < cycles; i++) {
      for (const name of rand() < 0.5 ? ['this', 'base'] : ['base', 'this']) {
        dist = builds[name];
        await page.goto(e.consoleUrl + screen);
        await page.locator('[data-testid="connection-banner"][data-state="live"]').waitFor({ timeout: 60_000 });
        await sleep(settleMs);
        await page.evaluate(() => {
          const w = /** @type {any} */ (window);
          w.__batches = 0;
          new MutationObserver(() => w.__batches++).observe(document.documentElement, {
            subtree: true,
            childList: true,
            characterData: true,
            attributes: true,
          });
        });
        const a = chromiumByType(bg.pid);
        const t0 = performance.now();
        await sleep(windowMs);
        const b = chromiumByType(bg.pid);
        const s = (performance.now() - t0) / 1000;
        const batches = (await page.evaluate(() => /** @type {any} */ (window).__batches)) / s;
        const row = { name, batches, total: 0, wake: 0 };
        for (const [k, v] of b) {
          const was = a.get(k) ?? { run: 0, vol: 0 };
          row[k] = (v.run - was.run) / s;
          row.total += row[k];
          row.wake += (v.vol - was.vol) / s;
        }
        rows.push(row);
        console.log(
          `| ${i + 1} | ${name} | ${KINDS.map((k) => fmt(row[k] ?? 0, 4)).join(' | ')} | ${fmt(row.total, 4)} | ${fmt(row.wake, 0)} | ${fmt(batches, 2)} |`,
        );
      }
    }
  } finally {
    load.kill('SIGTERM');
    await bg.close();
    await e.stop();
    await display.stop();
  }
  console.log(
    `\n| build | windows | ${KINDS.map((k) => `${k} cores`).join(' | ')} | total cores | wake-ups/s | mutation batches/s |`,
  );
  console.log(`|${'---|'.repeat(KINDS.length + 5)}`);
  for (const name of ['this', 'base']) {
    const rs = rows.filter((r) => r.name === name);
    const m = (f) => median(rs.map(f));
    console.log(
      `| ${name} | ${rs.length} | ${KINDS.map((k) =>
        fmt(
          m((r) => r[k] ?? 0),
          4,
        ),
      ).join(' | ')} | ${fmt(
        m((r) => r.total),
        4,
      )} | ${fmt(
        m((r) => r.wake),
        0,
      )} | ${fmt(
        m((r) => r.batches),
        2,
      )} |`,
    );
  }
}

await main();
