/**
 * The console against a stand-in control API (fake-api.ts): scale and fault injection only, as
 * the test plan allows: 2,000 models, a dropped feed, roles against a full model set. The screens'
 * screenshots are in console-screens.spec.ts; the engine specs in console-engine.spec.ts.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { expect, type Page, test } from '@playwright/test';
import { ConsolePage, ModelsPage, SetupPage } from './ConsolePage.js';
import { FakeControlApi, SETUP_TOKEN, TOKENS } from './fake-api.js';
import { refuseWebSockets } from './refused-socket.mjs';
import { serveConsole } from './static-server.mjs';

/** Makes `page` report itself hidden (or shown) to the console, as a background tab does. */
const setHidden = (page: Page, hidden: boolean) =>
  page.evaluate((h) => {
    Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => (h ? 'hidden' : 'visible') });
    document.dispatchEvent(new Event('visibilitychange'));
  }, hidden);

let server: Awaited<ReturnType<typeof serveConsole>>;

test.beforeAll(async () => {
  server = await serveConsole();
});
test.afterAll(async () => {
  await server.close();
});

test('first run: the setup token in the URL fragment is stripped at once and exchanged for an admin token', async ({
  page,
}) => {
  const api = new FakeControlApi({ setupDone: false });
  await api.install(page);
  await page.goto(`${server.url}/#setup=${SETUP_TOKEN}`);
  const setup = new SetupPage(page);
  await expect(setup.tokenInput()).toHaveValue(SETUP_TOKEN);
  expect(new URL(page.url()).hash).toBe('');
  await setup.submit();
  await expect(setup.adminToken()).toHaveText(TOKENS.admin);
  await setup.continue();
  const c = new ConsolePage(page, server.url);
  await c.expectLive();
  await expect(page.getByTestId('who')).toContainText('admin');
  expect(await page.evaluate(() => localStorage.getItem('hloserve.token'))).toBe(TOKENS.admin);
});

test('a used setup token is refused with a reason', async ({ page }) => {
  const api = new FakeControlApi({ setupDone: true });
  await api.install(page);
  await page.goto(server.url);
  const setup = new SetupPage(page);
  await setup.tokenInput().fill(SETUP_TOKEN);
  await setup.submit();
  await expect(page.getByRole('alert')).toContainText('not valid');
});

test('a refused token (revoked or expired) sends the console back to sign-in, saying why', async ({ page }) => {
  const api = new FakeControlApi({ models: 10 });
  await api.install(page);
  const c = new ConsolePage(page, server.url);
  await c.open('/models', 'revoked-token');
  await expect(page.getByTestId('setup')).toContainText('refused your token');
  expect(await page.evaluate(() => localStorage.getItem('hloserve.token'))).toBeNull();
});

test('a viewer sees no mutate controls on any screen, and is told it is read-only', async ({ page }) => {
  const api = new FakeControlApi({ models: 50 });
  await api.install(page);
  const c = new ConsolePage(page, server.url);
  await c.open('/models', TOKENS.viewer);
  await expect(page.getByTestId('read-only')).toBeVisible();
  await expect(new ModelsPage(page).rows().first()).toBeVisible();
  for (const path of ['/', '/models', '/models/resnet-0000', '/memory', '/upload', '/activity', '/settings']) {
    await c.open(path);
    await expect(page.locator('h1').first()).toBeVisible();
    await expect(c.mutateControls()).toHaveCount(0);
  }
  await c.open('/models/resnet-0000');
  await page.getByRole('tab', { name: 'Policy' }).click();
  await expect(page.getByTestId('policy')).toContainText('Read-only');
  await expect(page.getByTestId('policy-weight')).toBeDisabled();
});

test('an operator sees the actions, and each refused one says why', async ({ page }) => {
  const api = new FakeControlApi({ models: 50 });
  await api.install(page);
  const c = new ConsolePage(page, server.url);
  await c.open('/models/resnet-0000', TOKENS.operator);
  await expect(page.getByTestId('action-load')).toBeDisabled();
  await expect(page.locator('#action-load-why')).toHaveText('already loaded');
  await expect(page.getByTestId('action-reload')).toBeEnabled();
});

test('2,000 models: the table scrolls and filters, keeping only visible rows in the page', async ({ page }) => {
  const api = new FakeControlApi({ models: 2000 });
  await api.install(page);
  const c = new ConsolePage(page, server.url);
  await c.open('/models', TOKENS.admin);
  const models = new ModelsPage(page);
  await expect(models.rowCount()).toHaveText('2000 of 2000 models');
  // Virtualised: a screenful of rows in the DOM, not 2,000.
  expect(await models.rows().count()).toBeLessThan(80);
  await models.scroller().evaluate((el) => (el.scrollTop = el.scrollHeight));
  // Sorted by name, the last row is yolo-1996.
  await expect(page.getByRole('link', { name: 'yolo-1996' })).toBeVisible();
  const ms = await page.evaluate(async () => {
    const input = document.querySelector<HTMLInputElement>('[data-testid="model-search"]')!;
    const count = document.querySelector('[data-testid="row-count"]')!;
    const setter = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value')!.set!;
    const t0 = performance.now();
    setter.call(input, 'vit-01');
    input.dispatchEvent(new Event('input', { bubbles: true }));
    await new Promise<void>((resolve) => {
      const check = () => (count.textContent!.startsWith('10 of') ? resolve() : requestAnimationFrame(check));
      check();
    });
    return performance.now() - t0;
  });
  await expect(models.rowCount()).toHaveText('10 of 2000 models');
  await expect(models.rows()).toHaveCount(10);
  console.log(`filter of 2,000 rows to 10: ${ms.toFixed(1)} ms`);
  expect(ms).toBeLessThan(1000);
  await page.getByTestId('state-filter').selectOption('LOADING');
  await expect(models.rowCount()).toHaveText(/^\d+ of 2000 models$/);
});

test('an idle table keeps "last used" current: no feed update comes, the text still moves on', async ({ page }) => {
  const api = new FakeControlApi({ models: 10 });
  // bert was used 3 s before the page opens; the fake feed then sends nothing more.
  const bert = api.models.find((m) => m.name === 'bert')!;
  bert.residency = { ...bert.residency!, lastUsedAt: Date.now() - 3000 };
  await api.install(page);
  const c = new ConsolePage(page, server.url);
  await c.open('/models', TOKENS.admin);
  const cell = new ModelsPage(page).lastUsed('bert');
  await expect(cell).toHaveText(/^\d+s ago$/);
  const seconds = async () => Number(/^(\d+)s ago$/.exec((await cell.textContent()) ?? '')?.[1]);
  const first = await seconds();
  await expect.poll(seconds, { timeout: 10_000 }).toBeGreaterThanOrEqual(first + 3);
});

test("the live update interval is the browser's: chosen in Settings, every tab follows, a reload keeps it", async ({
  page,
  context,
}) => {
  const api = new FakeControlApi({ models: 10 });
  await api.install(page);
  // A viewer may choose it: it changes this browser, not the engine.
  await new ConsolePage(page, server.url).open('/settings', TOKENS.viewer);
  const choice = page.getByTestId('live-interval');
  await expect(choice).toHaveValue('1000');
  const other = await context.newPage();
  await api.install(other);
  await new ConsolePage(other, server.url).open('/settings');
  await expect(other.getByTestId('live-interval')).toHaveValue('1000');
  await choice.selectOption('5000');
  await expect(other.getByTestId('live-interval')).toHaveValue('5000');
  await page.reload();
  await expect(page.getByTestId('live-interval')).toHaveValue('5000');
});

test('the keyboard moves through the model rows and opens one', async ({ page }) => {
  const api = new FakeControlApi({ models: 50 });
  await api.install(page);
  const c = new ConsolePage(page, server.url);
  await c.open('/models', TOKENS.admin);
  const models = new ModelsPage(page);
  await models.scroller().focus();
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('Enter');
  // Sorted by name: bert-0005, bert-0015, bert-0025.
  await expect(page).toHaveURL(/\/models\/bert-0025$/);
  await expect(page.locator('h1')).toContainText('bert-0025');
});

test('the banner says reconnecting when the feed drops, then live again after the resubscribe', async ({ page }) => {
  const api = new FakeControlApi({ models: 20 });
  await api.install(page);
  const c = new ConsolePage(page, server.url);
  await c.open('/', TOKENS.admin);
  await c.expectLive();
  api.dropFeeds();
  await expect(c.banner()).toHaveAttribute('data-state', 'reconnecting');
  await expect(c.banner()).toContainText(/Reconnecting/);
  await expect(c.banner()).toHaveAttribute('data-state', /live|resynced/, { timeout: 15_000 });
});

test("a hidden tab's banner does not count down while the feed is refused; shown again, it shows the time left", async ({
  context,
}) => {
  const api = new FakeControlApi({ models: 20 });
  const shown = await context.newPage();
  const hidden = await context.newPage();
  await api.install(shown);
  await api.install(hidden);
  const a = new ConsolePage(shown, server.url);
  const b = new ConsolePage(hidden, server.url);
  await a.open('/', TOKENS.admin);
  await a.expectLive();
  await b.open('/activity', TOKENS.admin);
  await b.expectLive();
  await setHidden(hidden, true);
  // The shown tab holds the socket; from now on every socket it opens is refused (never opens), so
  // the attempts and their waits grow: the fifth waits 4 to 8 s.
  await shown.evaluate(refuseWebSockets);
  api.dropFeeds();
  await expect(a.banner()).toContainText(/attempt [5-9]/, { timeout: 20_000 });
  const shownText = await a.banner().innerText();
  const hiddenText = await b.banner().innerText();
  // The reconnecting banner at both widths, to be looked at (artifacts/screenshots).
  const shots = join(import.meta.dirname, 'artifacts', 'screenshots');
  mkdirSync(shots, { recursive: true });
  for (const [name, size] of [
    ['desktop', { width: 1440, height: 900 }],
    ['phone', { width: 414, height: 896 }],
  ] as const) {
    await shown.setViewportSize(size);
    await shown.screenshot({ path: join(shots, `reconnecting-${name}.png`) });
  }
  expect(hiddenText).toMatch(/Reconnecting \(attempt [5-9]/);
  // The shown tab counts down in whole seconds; the hidden one, mirroring the same state, renders nothing.
  await expect(a.banner()).not.toHaveText(shownText, { timeout: 3_000 });
  await hidden.waitForTimeout(1_500);
  expect(await b.banner().innerText()).toBe(hiddenText);
  await setHidden(hidden, false);
  // Shown, it reads the clock at once: the same whole seconds left as the tab that kept counting.
  const countdown = async (c: ConsolePage) => /Reconnecting \([^)]*\)/.exec(await c.banner().innerText())?.[0];
  await expect.poll(async () => `${await countdown(b)} / ${await countdown(a)}`).toMatch(/^(.+) \/ \1$/);
  expect(await countdown(b)).not.toBe(/Reconnecting \([^)]*\)/.exec(hiddenText)?.[0]);
});

test('a hidden tab holds no feed subscriptions, and catches up with a fresh snapshot when shown', async ({ page }) => {
  const api = new FakeControlApi({ models: 20 });
  await api.install(page);
  const c = new ConsolePage(page, server.url);
  await c.open('/', TOKENS.admin);
  await c.expectLive();
  expect(api.subscribed.size).toBeGreaterThan(0);
  await setHidden(page, true);
  await expect.poll(() => api.subscribed.size).toBe(0);
  await setHidden(page, false);
  await expect.poll(() => [...api.subscribed].sort()).toEqual(expect.arrayContaining(['metrics', 'models']));
  await c.expectLive();
  await expect(page.locator('.stat').filter({ hasText: 'models ready' })).toContainText('of 20');
});
