// The console's budgets, measured in Debian's Chromium (playwright-core):
//   1. initial JS (and CSS) of console/dist, gzipped;
//   2. first meaningful paint against a local engine: navigation start to the Overview showing
//      the engine's device memory bar (data from the control API, drawn), median of runs;
//   3. the models table at 2,000 models: typing a search to the row count updating, median.
// The engine is the real one on the CPU plugin with a fresh database (HLOSERVE_E2E_ENGINE_ROOT
// picks another built checkout). The 2,000-model list is injected with page.route (a scale
// stand-in: the example repository has three models).
// Run: npm run build && nice -n 10 node bench/console.mjs [--runs 7]
/* global fetch */
// Functions passed to page.evaluate / addInitScript run in the browser:
/* global localStorage, document, HTMLInputElement, Event, requestAnimationFrame */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { chromium } from 'playwright-core';
import { setupTokenFromLogs, startEngine } from '../e2e/console/engine.mjs';
import { serveConsole } from '../e2e/console/static-server.mjs';

const runs = Number(process.argv[process.argv.indexOf('--runs') + 1]) || 7;
const dist = join(import.meta.dirname, '..', 'console', 'dist');
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const kB = (n) => (n / 1000).toFixed(1);

// 1. What the first load fetches: index.html's script and stylesheet (Vite emits one entry chunk).
const html = readFileSync(join(dist, 'index.html'), 'utf8');
const initial = [...html.matchAll(/(?:src|href)="\/(assets\/[^"]+\.(?:js|css))"/g)].map((m) => m[1]);
let jsRaw = 0;
let jsGz = 0;
let cssGz = 0;
for (const f of initial) {
  const buf = readFileSync(join(dist, f));
  const gz = gzipSync(buf, { level: 9 }).length;
  if (f.endsWith('.js')) {
    jsRaw += buf.length;
    jsGz += gz;
  } else cssGz += gz;
}
const lazy = readdirSync(join(dist, 'assets')).filter((f) => f.endsWith('.js') && !initial.includes(`assets/${f}`));
console.log(
  `initial JS: ${kB(jsRaw)} kB raw, ${kB(jsGz)} kB gzipped (-9); CSS ${kB(cssGz)} kB gzipped; ${lazy.length} lazy chunks`,
);

// 2 and 3 need the engine and a browser.
const engine = await startEngine();
let front = null;
try {
  const health = await fetch(`${engine.consoleUrl}/api/v1/health`).catch(() => null);
  if (!health?.ok) {
    console.log('first meaningful paint, 2,000-row filter: not measured (this engine has no control API)');
    process.exit(0);
  }
  const served = await fetch(`${engine.consoleUrl}/models`).then((r) => r.text());
  let base = engine.consoleUrl;
  if (!served.includes('<div id="root">')) {
    front = await serveConsole(engine.consoleUrl);
    base = front.url;
    console.log(
      '(the engine does not serve console/dist yet: a front on the same machine serves it and passes /api through)',
    );
  }
  const setup = await fetch(`${engine.consoleUrl}/api/v1/setup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ setupToken: setupTokenFromLogs(engine.logs) }),
  });
  const token = (await setup.json()).data.token;
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: ['--no-sandbox'],
  });

  const fmp = [];
  const fcp = [];
  for (let i = 0; i < runs; i++) {
    // A fresh context each run: a cold cache, as a first visit.
    const ctx = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    await ctx.addInitScript((t) => localStorage.setItem('hloserve.token', t), token);
    const page = await ctx.newPage();
    await page.goto(base + '/');
    await page.waitForSelector('[data-testid="memory-bar"]');
    const t = await page.evaluate(() => performance.now());
    const paint = await page.evaluate(
      () => performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? null,
    );
    fmp.push(t);
    if (paint !== null) fcp.push(paint);
    await ctx.close();
  }
  console.log(
    `first meaningful paint (Overview with the device memory bar): median ${median(fmp).toFixed(0)} ms, ` +
      `min ${Math.min(...fmp).toFixed(0)}, max ${Math.max(...fmp).toFixed(0)} over ${runs} cold loads; ` +
      `first contentful paint median ${fcp.length ? median(fcp).toFixed(0) : '–'} ms`,
  );

  // 3. 2,000 models: the real engine answers everything but the model list.
  const models = Array.from({ length: 2000 }, (_, i) => ({
    name: `model-${String(i).padStart(4, '0')}`,
    version: '1',
    state: i % 9 ? 'READY' : 'UNAVAILABLE',
    reason: '',
    batchSizes: [1, 8],
    residency: {
      floor: 'system',
      weightBytes: 1e6 + i * 997,
      deviceResident: i % 3 === 0,
      hostResident: true,
      loading: false,
      leases: 0,
      loads: 1,
      evictions: i % 5,
    },
    policy: { residency: 'system', weight: 1, maxBatchSize: null, maxQueueDelayUs: null },
    queue: { depth: i % 4, rows: i % 4, inflight: 0 },
    stats: null,
  }));
  const ctx = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  await ctx.addInitScript((t) => localStorage.setItem('hloserve.token', t), token);
  const page = await ctx.newPage();
  await page.route('**/api/v1/models', (r) =>
    r.fulfill({ contentType: 'application/json', body: JSON.stringify({ data: models, seq: 0 }) }),
  );
  // Keep the engine's own three models from replacing the injected list.
  await page.routeWebSocket('**/api/v1/stream', (ws) => ws.onMessage(() => {}));
  await page.goto(base + '/models');
  await page.waitForSelector('text=2000 of 2000 models');
  const filterMs = [];
  const needles = ['model-12', 'model-1999', 'del-0', '7', 'model-00', 'zzz', 'model-1'];
  for (let i = 0; i < runs; i++) {
    const needle = needles[i % needles.length];
    filterMs.push(
      await page.evaluate(async (q) => {
        const input = document.querySelector('[data-testid="model-search"]');
        const count = document.querySelector('[data-testid="row-count"]');
        const setter = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value').set;
        const clear = () => {
          setter.call(input, '');
          input.dispatchEvent(new Event('input', { bubbles: true }));
        };
        clear();
        await new Promise((r) => {
          const wait = () => (count.textContent.startsWith('2000 of') ? r() : requestAnimationFrame(wait));
          wait();
        });
        const before = count.textContent;
        const t0 = performance.now();
        setter.call(input, q);
        input.dispatchEvent(new Event('input', { bubbles: true }));
        // Until the count changes and the next frame is painted.
        await new Promise((r) => {
          const wait = () =>
            count.textContent !== before ? requestAnimationFrame(() => r()) : requestAnimationFrame(wait);
          wait();
        });
        return performance.now() - t0;
      }, needle),
    );
  }
  console.log(
    `models table, 2,000 rows, search to repaint: median ${median(filterMs).toFixed(1)} ms, max ${Math.max(...filterMs).toFixed(1)} ms over ${runs} searches`,
  );
  await ctx.close();
  await browser.close();
} finally {
  await front?.close();
  await engine.stop();
}
