// bench/console-tabs-decompose: what of the 20 tabs' cost is whose. One engine (mlp, CPU plugin)
// serves one perf_analyzer (c=16, gRPC) through the whole run, as in bench/console-tabs-paired;
// each cycle measures every condition once, in a drawn order (seeded), each condition's window
// between two "nothing" windows (no browser), and pairs it with their mean. Conditions (the tabs
// child of bench/console-tabs.mjs, one Chromium per window):
//   chromium   Chromium started, no page
//   blank20    20 about:blank pages
//   console1   one console page, shown (the overview)
//   hidden20   20 console pages, 19 hidden (the budget's case)
//   shown20    20 console pages, all shown
//   nofeed20   as hidden20 with every feed socket refused (the engine holds no feed client)
//   bg20       20 console pages as tabs of one headful window on a virtual display (Xvfb), 19
//              really in the background (Chromium's own visibility: no frames, throttled timers)
//   bg1        one console page, shown, headful on the same display (bg20's front tab alone)
//   (bg* need Xvfb: `apt-get install xvfb`; the run starts one display for all its windows, and
//   its CPU is the displayCores figure, apart from the browser's)
//   NAME@base  the same with another build's console (--base DIR: its console/dist served to the
//              pages through a route in place of the engine's own; API and feed still this
//              engine's); NAME@this the same with this tree's console/dist through the same route,
//              the fair match for NAME@base
// Per window also the scheduling picture from /proc: the engine's JS thread's run-queue wait and
// involuntary switches per second, its other threads' wait, and the browser's wake-ups (voluntary
// switches over all its threads) per second.
// Usage: npm run build && nice -n 10 node bench/console-tabs-decompose.mjs [--cycles 6]
//   [--window-ms 4000] [--settle-ms 3000] [--conditions chromium,blank20,...] [--base DIR] [--seed N]
import { join, resolve } from 'node:path';
import { startServer } from '../e2e/dist/src/server-process.js';
import { startConsoleEngine } from './console-engine.mjs';
import { closeTabs, measure, openTabs, sleep, startDisplay, startLoad } from './console-tabs-window.mjs';
import { arg, bootstrap, fmt, machine, mean, median } from './stats.mjs';

const cycles = Number(arg('cycles', '6'));
const windowMs = Number(arg('window-ms', '4000'));
const settleMs = Number(arg('settle-ms', '3000'));
const baseDist = arg('base', null) ? join(resolve(arg('base')), 'console', 'dist') : '';
const names = arg('conditions', 'chromium,blank20,console1,hidden20,shown20,nofeed20').split(',');

/** name -> the tabs child's [tabs, hidden, mode, background]. */
const KINDS = {
  chromium: [0, '0', 'none'],
  blank20: [20, '0', 'blank'],
  console1: [1, '0', 'console'],
  hidden20: [20, '1', 'console'],
  shown20: [20, '0', 'console'],
  nofeed20: [20, '1', 'nofeed'],
  bg20: [20, '1', 'console', true],
  bg1: [1, '0', 'console', true],
};
function condition(name) {
  const [kind, build] = name.split('@');
  if (!KINDS[kind]) throw new Error(`unknown condition ${name}`);
  if (build && !(build === 'this' || (build === 'base' && baseDist)))
    throw new Error(`${name}: @this, or @base with --base DIR`);
  const [tabs, hidden, mode, background = false] = KINDS[kind];
  const dist = { base: baseDist, this: join(import.meta.dirname, '..', 'console', 'dist') }[build] ?? '';
  return { name, tabs, hidden, mode, dist, background };
}
const conditions = names.map(condition);

const COLS = [
  'rps',
  'engineUsPerReq',
  'browserCores',
  'jsWaitMs',
  'jsInvol',
  'otherWaitMs',
  'browserWakeups',
  'displayCores',
  'machineCtxt',
];

async function main() {
  console.log(`# bench/console-tabs-decompose, machine: ${machine()}`);
  console.log(
    `# ${cycles} cycles of ${names.join(', ')}; windows ${windowMs} ms, settle ${settleMs} ms${baseDist ? `; base console ${baseDist}` : ''}`,
  );
  const display = conditions.some((c) => c.background) ? await startDisplay() : null;
  const e = await startConsoleEngine(startServer);
  const load = startLoad(e);
  const windows = [];
  let seed = Number(arg('seed', '1'));
  const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const window = async (c) => {
    const child = c ? await openTabs(e, { ...c, display: c.background ? display : null }) : null;
    try {
      await sleep(settleMs);
      const m = await measure(e, load, child?.pid ?? 0, windowMs, display?.pid ?? 0);
      windows.push({ name: c?.name ?? 'nothing', ...m });
      console.log(
        `| ${windows.length} | ${windows.at(-1).name} | ${COLS.map((k) => fmt(m[k], k === 'rps' || k.endsWith('Ctxt') || k.endsWith('Wakeups') ? 0 : 2)).join(' | ')} | ${fmt(m.machineBusy, 3)} | ${fmt(m.load1, 1)} |`,
      );
    } finally {
      await closeTabs(child);
    }
  };
  try {
    await sleep(10_000); // the generator's ramp, compiled sizes, learned costs
    console.log(`\n| window | condition | ${COLS.join(' | ')} | machine busy | load1 |`);
    console.log(`|${'---|'.repeat(COLS.length + 4)}`);
    for (let i = 0; i < cycles; i++) {
      const order = [...conditions];
      for (let k = order.length - 1; k > 0; k--) {
        const j = Math.floor(rand() * (k + 1));
        [order[k], order[j]] = [order[j], order[k]];
      }
      for (const c of order) {
        await window(null);
        await window(c);
      }
    }
    await window(null);
  } finally {
    load.kill('SIGTERM');
    await e.stop();
    await display?.stop();
  }
  report(windows);
}

function report(windows) {
  const ci = (xs) =>
    bootstrap(xs, median)
      .map((x) => fmt(x, 3))
      .join('-');
  console.log(
    '\n| condition | pairs | throughput with/without, median (95 % CI) | engine µs/req ratio | browser cores | JS thread run-queue wait ms/s (with, without) | JS thread preemptions/s (with, without) | other engine threads wait ms/s (with, without) | browser wake-ups/s | machine switches/s (with, without) |',
  );
  console.log(`|${'---|'.repeat(10)}`);
  for (const c of conditions) {
    const ps = [];
    windows.forEach((w, k) => {
      if (w.name !== c.name) return;
      const side = [windows[k - 1], windows[k + 1]].filter((x) => x?.name === 'nothing');
      if (side.length) ps.push({ w, side });
    });
    if (!ps.length) continue;
    const r = (f) => ps.map((p) => f(p.w) / mean(p.side.map(f)));
    const both = (f, d = 1) =>
      `${fmt(median(ps.map((p) => f(p.w))), d)}, ${fmt(median(ps.map((p) => mean(p.side.map(f)))), d)}`;
    const tp = r((x) => x.rps);
    const us = r((x) => x.engineUsPerReq);
    console.log(
      `| ${c.name} | ${ps.length} | ${fmt(median(tp), 3)} (${ci(tp)}) | ${fmt(median(us), 3)} (${ci(us)}) | ${fmt(median(ps.map((p) => p.w.browserCores)), 3)}${c.background ? ` (+ display ${fmt(median(ps.map((p) => p.w.displayCores)), 3)})` : ''} | ` +
        `${both((x) => x.jsWaitMs)} | ${both((x) => x.jsInvol, 0)} | ${both((x) => x.otherWaitMs)} | ${fmt(median(ps.map((p) => p.w.browserWakeups)), 0)} | ${both((x) => x.machineCtxt, 0)} |`,
    );
  }
}

await main();
