// What bench/console-tabs-paired and bench/console-tabs-decompose share: the load (one
// perf_analyzer for the whole run), one measured window (throughput from the engine's own counter,
// CPU and scheduling from /proc). The statistics of paired windows are stats.mjs's.
/* global fetch */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { grpcLoadArgs, perfAnalyzerBinary, perfAnalyzerEnv } from '../e2e/dist/src/perf-analyzer.js';
import { procTable, threads, treeCpu, treePids } from './proc-cpu.mjs';

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The machine's busy and total jiffies over all CPUs, and its context switches (/proc/stat). */
function machineStat() {
  const lines = readFileSync('/proc/stat', 'utf8').split('\n');
  const f = lines[0].trim().split(/\s+/).slice(1).map(Number);
  const idle = f[3] + f[4];
  const total = f.slice(0, 8).reduce((a, b) => a + b, 0);
  const ctxt = Number(lines.find((l) => l.startsWith('ctxt '))?.split(' ')[1] ?? 0);
  return { busy: total - idle, total, ctxt };
}

async function successCount(metricsUrl) {
  const text = await (await fetch(metricsUrl)).text();
  let n = 0;
  for (const line of text.split('\n'))
    if (line.startsWith('nv_inference_request_success')) n += Number(line.slice(line.lastIndexOf(' ') + 1));
  return n;
}

/** Sums of the changes in `b` over `a` (threads new in `b` count from zero), over the threads `pick` keeps. */
function threadDelta(a, b, pick = () => true) {
  const d = { run: 0, wait: 0, vol: 0, invol: 0 };
  for (const [k, x] of b) {
    if (!pick(x, k)) continue;
    const y = a.get(k) ?? { run: 0, wait: 0, vol: 0, invol: 0 };
    for (const f of Object.keys(d)) d[f] += x[f] - y[f];
  }
  return d;
}

/**
 * The tabs child of bench/console-tabs.mjs against engine `e`: `tabs` console pages (all but one
 * hidden when `hidden` is '1'), or what `mode` opens instead ('none', 'blank', 'nofeed'), with
 * another build's console files from `dist`, and the browser's live update interval set to
 * `liveIntervalMs` (Settings' choice; the console's default when null); resolves once every page is live.
 */
export function openTabs(e, { tabs, hidden, mode = 'console', dist = '', display = null, liveIntervalMs = null }) {
  return new Promise((resolve_, reject) => {
    const argv = [join(import.meta.dirname, 'console-tabs.mjs'), '--tabs-child', e.consoleUrl, e.token];
    argv.push(String(tabs), hidden, '0', 'parallel', mode, dist, display ? 'background' : 'headless');
    const env = { ...process.env, ...(display ? { DISPLAY: display.display } : {}) };
    if (liveIntervalMs !== null) env.HLOSERVE_BENCH_LIVE_INTERVAL_MS = String(liveIntervalMs);
    const child = spawn(process.execPath, argv, { stdio: ['pipe', 'pipe', 'inherit'], env });
    child.stdout.on('data', (d) => String(d).includes('ready') && resolve_(child));
    child.once('exit', (code) => reject(new Error(`tabs child exited ${code} before ready`)));
  });
}

/**
 * A virtual X server (Xvfb, 1440x900) for a headful Chromium whose pages are tabs of one window,
 * so that all but the front one are really in the background (see console-tabs.mjs). Resolves to
 * its display (':N'), its pid and stop(); rejects when Xvfb is not installed.
 */
export function startDisplay() {
  return new Promise((resolve_, reject) => {
    // -displayfd: Xvfb picks a free display and writes its number once it accepts clients.
    const x = spawn('Xvfb', ['-displayfd', '1', '-screen', '0', '1440x900x24', '-nolisten', 'tcp'], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    x.once('error', (err) => reject(new Error(`Xvfb: ${err.message} (apt-get install xvfb)`)));
    x.once('exit', (code) => reject(new Error(`Xvfb exited ${code} before its display was up`)));
    let out = '';
    x.stdout.on('data', (d) => {
      out += d;
      const m = /^(\d+)\n/.exec(out);
      if (!m) return;
      const stop = async () => {
        if (x.exitCode !== null) return;
        const exited = new Promise((r) => x.once('exit', r));
        x.kill('SIGTERM');
        await exited;
      };
      resolve_({ display: `:${m[1]}`, pid: x.pid, stop });
    });
  });
}

/** Closes the tabs child (its stdin's end), waiting for it to exit; nothing for none. */
export async function closeTabs(child) {
  if (!child) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.stdin.end();
  await exited;
}

/** The load for the whole run: perf_analyzer never stable (its records are freed per 2 s window), killed at the end. */
export function startLoad(e) {
  const args = grpcLoadArgs('mlp', e.server.grpcUrl(), 16);
  return spawn(perfAnalyzerBinary(), [...args, '-p', '2000', '-s', '0.0001', '-r', '100000'], {
    stdio: 'ignore',
    env: perfAnalyzerEnv(),
  });
}

/**
 * One measured window of `windowMs`: requests, CPU of the engine, browser, load generator and
 * machine; the engine's JS thread's and other threads' run-queue wait and switches, and the
 * browser's wake-ups (voluntary switches over all its threads).
 */
export async function measure(e, load, browserPid, windowMs, displayPid = 0) {
  const t0 = performance.now();
  const p0 = procTable();
  const m0 = machineStat();
  const enginePid = e.server.child.pid;
  const browserPids0 = treePids(p0, browserPid);
  const e0 = threads([enginePid]);
  const b0 = threads(browserPids0);
  const n0 = await successCount(e.metricsUrl);
  await sleep(windowMs);
  const n1 = await successCount(e.metricsUrl);
  const e1 = threads([enginePid]);
  const p1 = procTable();
  const b1 = threads(treePids(p1, browserPid));
  const m1 = machineStat();
  const s = (performance.now() - t0) / 1000;
  const cores = (pid) => (treeCpu(p1, pid) - treeCpu(p0, pid)) / s;
  const byType = {};
  const wakeupsByType = {};
  for (const pid of treePids(p1, browserPid)) {
    let type = 'driver';
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      type = /--type=([^\s\0]+)/.exec(cmd)?.[1] ?? (cmd.includes('chrom') ? 'browser' : 'driver');
      if (type === 'utility') type = /--utility-sub-type=([^\s\0]+)/.exec(cmd)?.[1] ?? type;
    } catch {
      // exited
    }
    byType[type] = (byType[type] ?? 0) + ((p1.cpu.get(pid) ?? 0) - (p0.cpu.get(pid) ?? 0)) / s;
    const w = threadDelta(b0, b1, (_, k) => k.startsWith(`${pid}/`)).vol / s;
    wakeupsByType[type] = (wakeupsByType[type] ?? 0) + w;
  }
  const engineCores = cores(enginePid);
  const rps = (n1 - n0) / s;
  const js = threadDelta(e0, e1, (x) => x.main);
  const rest = threadDelta(e0, e1, (x) => !x.main);
  const br = threadDelta(b0, b1);
  return {
    rps,
    engineCores,
    engineUsPerReq: (1e6 * engineCores) / rps,
    browserCores: cores(browserPid),
    // The virtual X server of a headful browser (--background): what the shown tab's painting costs
    // on a display here (an operator's display is usually another machine's).
    displayCores: cores(displayPid),
    byType,
    wakeupsByType,
    loadCores: cores(load?.pid ?? 0),
    machineBusy: (m1.busy - m0.busy) / (m1.total - m0.total),
    load1: loadavg()[0],
    // Per second: the JS thread's run-queue wait (ms), its involuntary switches (preemptions) and
    // voluntary ones; the engine's other threads' wait; the browser's wake-ups; the machine's switches.
    jsWaitMs: js.wait / 1e6 / s,
    jsInvol: js.invol / s,
    jsVol: js.vol / s,
    otherWaitMs: rest.wait / 1e6 / s,
    otherInvol: rest.invol / s,
    browserWakeups: br.vol / s,
    browserInvol: br.invol / s,
    machineCtxt: (m1.ctxt - m0.ctxt) / s,
  };
}
