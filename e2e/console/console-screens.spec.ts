/**
 * How the screens look, against the stand-in API (fake-api.ts: the same data and clock on every
 * run). The screens that matter (overview, models, model detail, memory map, settings) are
 * checked against committed baselines (baselines/) at 1440x900 and 414x896 in light, with the
 * live numbers masked; every screen, light and dark, is also saved to the git-ignored
 * artifacts/screenshots/ to be looked at.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test, type Browser, type Page } from '@playwright/test';
import { ConsolePage } from './ConsolePage.js';
import { FakeControlApi, T0, TOKENS } from './fake-api.js';
import { serveConsole } from './static-server.mjs';

let server: Awaited<ReturnType<typeof serveConsole>>;
const shots = join(import.meta.dirname, 'artifacts', 'screenshots');

test.beforeAll(async () => {
  server = await serveConsole();
  mkdirSync(shots, { recursive: true });
});
test.afterAll(async () => {
  await server.close();
});

/** [file name, path, its heading, checked against a baseline]. */
const screens = [
  ['overview', '/', 'Overview', true],
  ['models', '/models', 'Models', true],
  ['model-detail', '/models/resnet-0000', 'resnet-0000', true],
  ['memory-map', '/memory', 'Memory map', true],
  ['upload', '/upload', 'Upload a bundle', false],
  ['settings', '/settings', 'Settings', true],
] as const;
const sizes = [
  ['desktop', { width: 1440, height: 900 }],
  ['phone', { width: 414, height: 896 }],
] as const;
type Size = (typeof sizes)[number];

/** What moves while a screen is open: charts, the headline rates. */
const liveNumbers = (page: Page) => [page.locator('canvas'), page.locator('.stats .stat .v')];

async function openContext(browser: Browser, [, viewport]: Size, colorScheme: 'light' | 'dark') {
  // One locale, time zone and clock, so dates and "3m ago" read the same on every machine.
  const context = await browser.newContext({
    viewport,
    colorScheme,
    deviceScaleFactor: 1,
    locale: 'en-US',
    timezoneId: 'UTC',
  });
  const page = await context.newPage();
  await page.clock.setFixedTime(T0 + 30_000);
  return { context, page };
}

/** The screen's heading shown, fonts loaded and two frames drawn: what a screenshot waits for. */
async function settled(page: Page, heading?: string): Promise<void> {
  await expect(page.locator('h1').first()).toContainText(heading ?? '');
  await page.evaluate(async () => {
    await document.fonts.ready;
    await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  });
}

for (const size of sizes) {
  const [name] = size;
  test(`the screens that matter look as they did, ${name}; every screen saved, light and dark`, async ({ browser }) => {
    for (const scheme of ['light', 'dark'] as const) {
      const { context, page } = await openContext(browser, size, scheme);
      await new FakeControlApi({ models: 60 }).install(page);
      const c = new ConsolePage(page, server.url);
      await c.open('/', TOKENS.admin);
      await c.expectLive();
      // One page load, then in-app navigation: as a person moves through the console.
      for (const [screen, path, heading, checked] of screens) {
        await c.go(path);
        await settled(page, heading);
        if (checked && scheme === 'light') {
          await expect(page, `${screen} at ${name}`).toHaveScreenshot(`${screen}-${name}.png`, {
            mask: liveNumbers(page),
            // Two matching captures in a row; on two shared cores that can take a while.
            timeout: 15_000,
          });
        }
        await page.screenshot({ path: join(shots, `${screen}-${name}-${scheme}.png`), fullPage: true });
      }
      await c.go('/activity');
      for (const tab of ['Audit log', 'Engine events']) {
        await page.getByRole('tab', { name: tab }).click();
        await settled(page);
        const file = `activity-${tab.split(' ')[0]!.toLowerCase()}-${name}-${scheme}.png`;
        await page.screenshot({ path: join(shots, file), fullPage: true });
      }
      await c.go('/models/resnet-0000');
      await settled(page, 'resnet-0000');
      await page.getByRole('tab', { name: 'Policy' }).click();
      await page.getByTestId('policy-weight').fill('3');
      await page.getByTestId('policy-review').click();
      await page.screenshot({ path: join(shots, `policy-diff-${name}-${scheme}.png`), fullPage: true });
      await context.close();
      const first = await openContext(browser, size, scheme);
      await new FakeControlApi({ setupDone: false }).install(first.page);
      await first.page.goto(server.url);
      await expect(first.page.getByTestId('token-input')).toBeVisible();
      await first.page.screenshot({ path: join(shots, `first-run-${name}-${scheme}.png`) });
      await first.context.close();
    }
  });
}
