// Playwright for the console, in Debian's Chromium (never a downloaded browser build).
// `npm test` runs it (scripts/run-tests.mjs, after the set-up found Chromium: HLOSERVE_TEST_CHROMIUM);
// by hand: npx playwright test -c e2e/console (after npm run build; CHROMIUM=/path overrides the binary).
// Screenshot baselines live in e2e/console/baselines/ (committed); after a deliberate change to a
// screen: npx playwright test -c e2e/console console-screens --update-snapshots, then look at them.
import { defineConfig } from '@playwright/test';

export default defineConfig({
  testDir: '.',
  testMatch: '*.spec.ts',
  forbidOnly: !!process.env.CI,
  retries: process.env.CI ? 1 : 0,
  // Two cores shared with the engines the specs start: the stand-in specs run beside the engine
  // specs (they wait on the engine more than they compute), one engine per spec file.
  workers: 2,
  fullyParallel: false,
  timeout: 120_000,
  reporter: [['list']],
  outputDir: 'artifacts/test-results',
  snapshotPathTemplate: '{testDir}/baselines/{arg}{ext}',
  expect: {
    toHaveScreenshot: {
      // Debian pins Chromium's version and the data, clock, locale and zone are fixed, so what is
      // left between runs is antialiasing at glyph edges (the per-pixel threshold); a changed
      // word or a shifted row is well over 0.2 % of the pixels.
      threshold: 0.25,
      maxDiffPixelRatio: 0.002,
      animations: 'disabled',
      caret: 'hide',
    },
  },
  use: {
    browserName: 'chromium',
    launchOptions: {
      executablePath: process.env.HLOSERVE_TEST_CHROMIUM ?? process.env.CHROMIUM ?? '/usr/bin/chromium',
      args: ['--no-sandbox'],
    },
    viewport: { width: 1440, height: 900 },
    trace: 'on-first-retry',
    colorScheme: 'light',
  },
});
