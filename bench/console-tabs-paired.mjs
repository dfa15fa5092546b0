// bench/console-tabs-paired: what the console open in 20 tabs costs inference, measured so that a
// 3 % effect can be told from the machine's noise. bench/console-tabs restarted perf_analyzer for
// every window (connection set-up, its own ramp), always measured "without" before "with", opened
// the browser just before the "with" window (start-up spilling into it) and paired 4 windows: the
// paired ratios swung +-20 %. Here:
// - one perf_analyzer (c=16, gRPC, mlp) runs through the whole run; throughput per window is the
//   engine's own success counter (metrics port) read at the window's edges, so a window can be
//   short and no window pays a generator start;
// - "with" (the tabs child of bench/console-tabs.mjs: 20 pages, --hidden as there) and "without"
//   alternate many times; the tabs are opened and closed outside the windows, each window starting
//   a settle time after the change (Chromium's start-up, the hidden leader's hand-over, its exit);
// - each cycle holds one "with" and one "without" window, which first drawn (seeded, --seed N), so
//   other work that comes and goes with a period near the cycle's cannot line up with one phase;
//   each "with" window is paired with the mean of the "without" windows next to it (one or two),
//   which cancels a drift that is linear over that span; the report is the median of the paired ratios
//   with a bootstrap 95 % interval (and the mean's), over many pairs;
// - per window, from /proc: the engine's CPU (cores, and µs per request), the browser's process
//   tree (cores), perf_analyzer's, and the machine's busy share and load average.
// --control: the same cycle with no tabs in either phase (without against without): the interval
//   that run gives is what this machine can resolve.
// --background: the tabs as an operator has them: headful Chromium on a virtual display (Xvfb,
//   started once for the run), the 20 pages tabs of one window, all but the front one hidden to
//   Chromium itself (no compositor frames, throttled timers, backgrounded renderers), checked per
//   page; implies --hidden. Without it (the default, and where Xvfb is absent) the pages are
//   headless and --hidden only tells the console they are hidden: Chromium still draws them, an
//   upper bound on a real browser's cost. Needs `apt-get install xvfb`; nothing else uses it.
// Usage: npm run build && nice -n 10 node bench/console-tabs-paired.mjs [--cycles 20]
//   [--window-ms 5000] [--settle-ms 4000] [--tabs 20] [--hidden | --background] [--control]
//   [--build DIR] [--csv f] [--no-load] [--steady [--open-settle-ms 60000]] [--live-interval-ms N];
//   or --from-csv f[,g...] to re-analyse runs (pooled).
// The budget's run: node bench/console-tabs-paired.mjs --cycles 12 --window-ms 5000 --settle-ms 4000
//   --background (and --hidden, headless, beside it for the bound).
// --steady: the tabs opened once, left to settle (--open-settle-ms, 60 s: for the first half
//   minute 20 freshly opened tabs cost Chromium about twice what they cost later, session 28),
//   then kept open for the whole run; a "without" window has the tabs child's whole process tree
//   stopped (SIGSTOP: no CPU, no wake-ups) and a "with" window has it running again, each after the
//   settle time. What the open tabs cost an operator who keeps them, not what opening them costs.
//   The engine keeps the feed's one socket in both phases: its own feed work (0.2-0.3 % of its JS
//   thread, session 27) is not in the difference.
// --live-interval-ms N: the tabs' browser set to update live data every N ms (Settings, "This
//   browser": 1000, 2000 or 5000), instead of the console's default (every second).
// --no-load: no inference; the engine's own CPU with and without the tabs, and the browser's by process type.
// --build DIR: the engine and console of another built checkout (its e2e/dist, engine/dist,
//   console/dist), to measure an earlier commit with the same method.
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { startConsoleEngine } from './console-engine.mjs';
import {
  closeTabs,
  measure as measureWindow,
  openTabs,
  sleep,
  startDisplay,
  startLoad,
} from './console-tabs-window.mjs';
import { procTable, treePids } from './proc-cpu.mjs';
import { arg, bootstrap, fmt, machine, mean, median } from './stats.mjs';

const cycles = Number(arg('cycles', '20'));
const windowMs = Number(arg('window-ms', '5000'));
const settleMs = Number(arg('settle-ms', '4000'));
const tabs = Number(arg('tabs', '20'));
const background = process.argv.includes('--background');
const hidden = background || process.argv.includes('--hidden');
const control = process.argv.includes('--control');
const buildDir = arg('build', null);
const csvPath = arg('csv', null);
const noLoad = process.argv.includes('--no-load');
const steady = process.argv.includes('--steady') && !control;
const openSettleMs = Number(arg('open-settle-ms', '60000'));
const liveIntervalMs = arg('live-interval-ms', null);

async function startEngine() {
  const serverProcess = buildDir
    ? join(resolve(buildDir), 'e2e', 'dist', 'src', 'server-process.js')
    : join(import.meta.dirname, '..', 'e2e', 'dist', 'src', 'server-process.js');
  const { startServer } = await import(pathToFileURL(serverProcess).href);
  return startConsoleEngine(startServer);
}

/** One measured window (bench/console-tabs-window.mjs). */
const measure = (e, load, browserPid) => measureWindow(e, load, browserPid, windowMs, displayPid);
let displayPid = 0;

/** Every window so far, in time order (rewritten after each, so a run cut short keeps what it measured). */
function writeCsv(windows) {
  if (!csvPath) return;
  const cols = [
    'phase',
    'index',
    'rps',
    'engineCores',
    'engineUsPerReq',
    'browserCores',
    'loadCores',
    'machineBusy',
    'load1',
    'jsWaitMs',
    'jsInvol',
    'browserWakeups',
    'displayCores',
  ];
  const rows = windows.map((x, i) => cols.map((c) => (c === 'index' ? i : x[c])));
  writeFileSync(csvPath, [cols, ...rows].map((r) => r.join(',')).join('\n') + '\n');
}

async function main() {
  console.log(`# bench/console-tabs-paired, machine: ${machine()}`);
  console.log(
    `# ${cycles} cycles, windows ${windowMs} ms, settle ${settleMs} ms${steady ? `, tabs kept open (settled ${openSettleMs} ms; stopped in "without")` : ''}, ${control ? 'CONTROL (no tabs in either phase)' : `${tabs} tabs${background ? ', background tabs of one headful window (Xvfb)' : hidden ? ', all but one told hidden (headless)' : ', all shown'}`}${buildDir ? `, build ${buildDir}` : ''}${liveIntervalMs ? `, live updates every ${liveIntervalMs} ms` : ''}`,
  );
  const display = background ? await startDisplay() : null;
  displayPid = display?.pid ?? 0;
  // Set inside the try below, so that a start that fails half-way leaves nothing running.
  let e = null;
  let load = null;
  let tabsChild = null;
  const windows = [];
  // Which phase comes first in each cycle is drawn (seeded): other work on the machine that comes
  // and goes with a period near the cycle's cannot then line up with one phase.
  let seed = Number(arg('seed', '1'));
  const coin = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31 < 0.5;
  const phase = async (withTabsNow) => {
    if (steady) signalTree(tabsChild.pid, withTabsNow ? 'SIGCONT' : 'SIGSTOP');
    else if (withTabsNow && !control)
      tabsChild = await openTabs(e, { tabs, hidden: hidden ? '1' : '0', display, liveIntervalMs });
    await sleep(settleMs);
    const m = await measure(e, load, tabsChild?.pid ?? 0);
    if (!steady) {
      await closeTabs(tabsChild);
      tabsChild = null;
    }
    windows.push({ phase: withTabsNow ? 'with' : 'without', ...m });
    writeCsv(windows);
    const types = Object.entries(m.byType)
      .sort((x, y) => y[1] - x[1])
      .map(([k, v]) => `${k} ${fmt(1000 * v, 1)}`)
      .join(', ');
    console.log(
      `| ${windows.length} | ${windows.at(-1).phase} | ${fmt(m.rps, 0)} | ${fmt(m.engineCores, 3)} | ${fmt(m.engineUsPerReq, 1)} | ` +
        `${fmt(m.browserCores, 3)}${noLoad && types ? ` (ms/s: ${types})` : ''} | ${fmt(m.loadCores, 2)} | ${fmt(m.machineBusy, 3)} | ${fmt(m.load1, 1)} |`,
    );
  };
  try {
    e = await startEngine();
    load = noLoad ? null : startLoad(e);
    await sleep(10_000); // the generator's ramp, compiled sizes, learned costs
    if (steady) {
      tabsChild = await openTabs(e, { tabs, hidden: hidden ? '1' : '0', display, liveIntervalMs });
      await sleep(openSettleMs);
    }
    console.log(
      '\n| window | phase | infer/s | engine cores | engine µs/req | browser cores | perf_analyzer cores | machine busy | load1 |',
    );
    console.log('|---|---|---|---|---|---|---|---|---|');
    await phase(false);
    for (let i = 0; i < cycles; i++) {
      const withFirst = coin();
      await phase(withFirst);
      await phase(!withFirst);
    }
  } finally {
    // A stopped browser cannot quit.
    if (steady && tabsChild) signalTree(tabsChild.pid, 'SIGCONT');
    await closeTabs(tabsChild);
    load?.kill('SIGTERM');
    await e?.stop();
    await display?.stop();
  }
  report(windows);
}

/** Stops or resumes every process of the tabs child's tree (its driver and the browser). */
function signalTree(root, signal) {
  for (const pid of treePids(procTable(), root)) {
    try {
      process.kill(pid, signal);
    } catch {
      /* a process that ended */
    }
  }
}

/** Each with-window and the without-windows next to it (one or two: every cycle holds one of each). */
function pairs(windows) {
  const out = [];
  windows.forEach((w, k) => {
    if (w.phase !== 'with') return;
    const side = [windows[k - 1], windows[k + 1]].filter((x) => x?.phase === 'without');
    if (side.length > 0) out.push({ w, side });
  });
  return out;
}

/**
 * The paired figures. Each with-window against the mean of the without-windows next to it:
 * - measured: throughput with / without;
 * - CPU-accounted: what the same pair predicts on a saturated machine, from CPU time alone: the
 *   share of the cores the browser took from this run's processes (browser / (engine +
 *   perf_analyzer + browser)) times the change in engine + generator CPU per request. It does not
 *   move when other work on the machine takes cores from both phases, which the measured ratio does.
 */
function report(windows) {
  const without = windows.filter((x) => x.phase === 'without');
  const withTabs = windows.filter((x) => x.phase === 'with');
  const ps = pairs(windows);
  const sideMean = (p, f) => mean(p.side.map(f));
  if (noLoad) {
    const diffs = ps.map((p) => p.w.engineCores - sideMean(p, (x) => x.engineCores));
    console.log(
      `\nidle engine (no inference), ${ps.length} pairs: cores without ${fmt(median(without.map((x) => x.engineCores)), 4)}, ` +
        `with ${fmt(median(withTabs.map((x) => x.engineCores)), 4)}; paired difference median ${fmt(1000 * median(diffs), 2)} ms/s ` +
        `(CI ${bootstrap(diffs, median)
          .map((x) => fmt(1000 * x, 2))
          .join(' to ')}); browser ${fmt(median(withTabs.map((x) => x.browserCores)), 4)} cores`,
    );
    return;
  }
  const ratios = ps.map((p) => p.w.rps / sideMean(p, (x) => x.rps));
  const usRatios = ps.map((p) => p.w.engineUsPerReq / sideMean(p, (x) => x.engineUsPerReq));
  const cpuPerReq = (x) => (x.engineCores + x.loadCores) / x.rps;
  const accounted = ps.map(
    ({ w, side }) =>
      (1 - w.browserCores / (w.engineCores + w.loadCores + w.browserCores)) *
      (mean(side.map(cpuPerReq)) / cpuPerReq(w)),
  );
  const ci = (xs, stat) => bootstrap(xs, stat).map((x) => fmt(x, 3));
  const pct = (r) => fmt(100 * (1 - r), 1);
  const mr = median(ratios);
  const [lo, hi] = bootstrap(ratios, median);
  console.log(
    `\nthroughput with/without, ${ratios.length} pairs: median ${fmt(mr, 3)} (95 % CI ${fmt(lo, 3)}-${fmt(hi, 3)}; cost ${pct(mr)} %, CI ${pct(hi)} to ${pct(lo)} %); ` +
      `mean ${fmt(mean(ratios), 3)} (CI ${ci(ratios, mean).join('-')}); ratios ${fmt(Math.min(...ratios), 3)}-${fmt(Math.max(...ratios), 3)}`,
  );
  console.log(
    `engine CPU per request with/without: median ${fmt(median(usRatios), 3)} (CI ${ci(usRatios, median).join('-')}); ` +
      `µs/req without ${fmt(median(without.map((x) => x.engineUsPerReq)), 1)}, with ${fmt(median(withTabs.map((x) => x.engineUsPerReq)), 1)}`,
  );
  const ma = median(accounted);
  const [alo, ahi] = bootstrap(accounted, median);
  console.log(
    `CPU-accounted with/without: median ${fmt(ma, 3)} (95 % CI ${fmt(alo, 3)}-${fmt(ahi, 3)}; cost ${pct(ma)} %, CI ${pct(ahi)} to ${pct(alo)} %)`,
  );
  const b = withTabs.map((x) => x.browserCores);
  console.log(
    `browser (Chromium and its driver) in the with windows: median ${fmt(median(b), 3)} cores (${fmt(Math.min(...b), 3)}-${fmt(Math.max(...b), 3)}), ` +
      `${fmt(median(withTabs.map((x) => x.browserWakeups ?? 0)), 0)} wake-ups/s${background ? `, Xvfb ${fmt(median(withTabs.map((x) => x.displayCores ?? 0)), 3)} cores` : ''}; ` +
      `engine cores without ${fmt(median(without.map((x) => x.engineCores)), 3)}, with ${fmt(median(withTabs.map((x) => x.engineCores)), 3)}; ` +
      `machine busy ${fmt(median([...without, ...withTabs].map((x) => x.machineBusy)), 3)}; load1 ${fmt(Math.min(...withTabs.map((x) => x.load1)), 1)}-${fmt(Math.max(...withTabs.map((x) => x.load1)), 1)}`,
  );
}

/** A run's windows as written with --csv. */
function readWindows(file) {
  const [head, ...lines] = readFileSync(file, 'utf8').trim().split('\n');
  const cols = head.split(',');
  const rows = lines.map((l) => Object.fromEntries(l.split(',').map((v, i) => [cols[i], i < 1 ? v : Number(v)])));
  // Files written before the phases were drawn list every without-window, then every with-window,
  // each numbered within its phase (so an index repeats); they alternated without, with, without, ...
  const o = rows.filter((r) => r.phase === 'without');
  const w = rows.filter((r) => r.phase === 'with');
  const grouped = new Set(rows.map((r) => r.index)).size < rows.length;
  return grouped ? o.flatMap((x, i) => (w[i] ? [x, w[i]] : [x])) : rows;
}

const fromCsv = arg('from-csv', null);
if (fromCsv) {
  // Re-analyse runs (--from-csv a.csv,b.csv pools their pairs; no window is paired across two runs).
  report(fromCsv.split(',').flatMap((f, i) => [...(i > 0 ? [{ phase: 'between runs' }] : []), ...readWindows(f)]));
} else await main();
