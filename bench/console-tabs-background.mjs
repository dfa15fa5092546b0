// The tabs child's real background tabs (bench/console-tabs.mjs, kind 'background'): Chromium
// headful on $DISPLAY (Xvfb, from startDisplay in ./console-tabs-window.mjs), its pages tabs of one
// window, so that all but the front one are hidden to Chromium itself, as an operator's background
// tabs are: no compositor frames, timers throttled, renderers backgrounded.
// Why not Playwright's launch: it passes --disable-background-timer-throttling,
// --disable-renderer-backgrounding and --disable-backgrounding-occluded-windows, and (the one that
// keeps a tab visible even with those removed) turns on focus emulation for every page it
// attaches to, which holds the page as if captured: each tab then reports 'visible'. So Chromium
// is started here with none of those, and Playwright attaches over CDP with noDefaults (no focus
// emulation, no viewport override in the default context); the default context's new pages are
// tabs of the window Chromium opened with.
/* global clearTimeout */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Chromium on $DISPLAY with `args`, attached over CDP: its browser, default context, first tab and
 * close(), and its pid. `disabledFeatures` join the ones turned off here (Chromium reads one --disable-features).
 */
export async function launchBackground(chromium, executablePath, args, disabledFeatures = []) {
  if (!process.env.DISPLAY) throw new Error('background tabs need $DISPLAY (bench --background starts Xvfb)');
  const profile = mkdtempSync(join(tmpdir(), 'hloserve-tabs-'));
  const proc = spawn(
    executablePath,
    [
      ...args,
      '--remote-debugging-port=0',
      `--user-data-dir=${profile}`,
      '--window-size=1440,900',
      // Playwright's quiet-browser switches, less the three backgrounding ones.
      '--no-first-run',
      '--no-default-browser-check',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-default-apps',
      '--disable-sync',
      '--password-store=basic',
      '--use-mock-keychain',
      // This machine has no network: Chromium's calls to Google's services fail and are retried.
      // Its autofill queries (one per form a page shows, per tab) came back several times a second
      // for 20 tabs: ~0.008 cores and ~45 wake-ups a second of the browser's, counted against the
      // console (session 27). A browser with a network asks once per form and keeps the answer.
      // Off, as Playwright's own launch turns off the optimization hints and the accounts check.
      `--disable-features=${['AutofillServerCommunication', 'OptimizationHints', ...disabledFeatures].join(',')}`,
      '--enable-features=SkipListAccountsWithoutGaiaCookies',
      'about:blank',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const endpoint = await new Promise((resolve_, reject) => {
    let err = '';
    proc.stderr.on('data', (d) => {
      err += d;
      const m = /DevTools listening on (ws:\S+)/.exec(err);
      if (m) resolve_(m[1]);
    });
    proc.once('exit', (code) => reject(new Error(`chromium exited ${code}:\n${err.slice(-2000)}`)));
  });
  proc.stderr.resume();
  const browser = await chromium.connectOverCDP(endpoint, { noDefaults: true });
  const context = browser.contexts()[0];
  const firstPage = context.pages()[0] ?? (await context.newPage());
  const close = async () => {
    const exited = new Promise((r) => (proc.exitCode !== null ? r() : proc.once('exit', r)));
    // Browser.close: Chromium shuts down as a user's quit would, its profile written before it exits.
    const cdp = await browser.newBrowserCDPSession().catch(() => null);
    await cdp?.send('Browser.close').catch(() => undefined);
    const killer = setTimeout(() => proc.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(killer);
    try {
      rmSync(profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
    } catch (err) {
      process.stderr.write(`# tabs child: profile ${profile} left: ${err.message}\n`);
    }
  };
  return { browser, context, firstPage, close, pid: proc.pid };
}

/** Throws unless every page but the last says it is hidden and the last that it is shown. */
export async function checkBackground(pages) {
  /* global document */
  const states = await Promise.all(pages.map((p) => p.evaluate(() => document.visibilityState)));
  const wrong = states.filter((s, i) => s !== (i === states.length - 1 ? 'visible' : 'hidden'));
  if (wrong.length) throw new Error(`background tabs: visibility ${states.join(',')}`);
}
