// Playwright for the console, in Debian's Chromium (never a downloaded browser build).
// Run: npx playwright test -c e2e/console   (after npm run build; CHROMIUM=/path overrides the binary)
import { defineConfig } from '@playwright/test';

export default defineConfig({
  testDir: '.',
  testMatch: '*.spec.ts',
  forbidOnly: !!process.env.CI,
  retries: process.env.CI ? 2 : 0,
  // Two cores shared with everything else: one browser at a time.
  workers: 1,
  fullyParallel: false,
  timeout: 120_000,
  reporter: [['list']],
  outputDir: 'artifacts/test-results',
  use: {
    browserName: 'chromium',
    launchOptions: { executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', args: ['--no-sandbox'] },
    viewport: { width: 1440, height: 900 },
    trace: 'on-first-retry',
    colorScheme: 'light',
  },
});
