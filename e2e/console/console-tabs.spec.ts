/**
 * Many console tabs in one browser share one live feed: the real engine counts its feed
 * connections (hloserve_console_feed_clients on its metrics port) while pages of one browser
 * context, as the tabs of one window, watch it.
 */
import { expect, test, type BrowserContext, type Page } from '@playwright/test';
import { ConsolePage, SetupPage } from './ConsolePage.js';
import { adminToken, startEngine } from './engine.mjs';

type Engine = Awaited<ReturnType<typeof startEngine>>;

let engine: Engine;
let admin: string;

test.describe.configure({ mode: 'serial' });

test.beforeAll(async () => {
  test.setTimeout(240_000);
  engine = await startEngine();
  admin = await adminToken(engine);
});

test.afterAll(async () => {
  await engine?.stop();
});

/** The engine's own count of open feed connections. */
async function feedClients(): Promise<number> {
  const text = await (await fetch(`${engine.metricsUrl}/metrics`)).text();
  const m = /^hloserve_console_feed_clients (\d+)/m.exec(text);
  if (!m) throw new Error('no hloserve_console_feed_clients on /metrics');
  return Number(m[1]);
}

/** The banner's watermark: the highest feed seq the page has applied. */
async function seqOf(page: Page): Promise<number> {
  return Number((await page.getByTestId('connection-banner').getAttribute('data-seq')) ?? NaN);
}

/** Every page's watermark moves on: the feed's messages reach each of them. */
async function expectLiveUpdates(pages: readonly Page[]): Promise<void> {
  const before = await Promise.all(pages.map(seqOf));
  for (const [i, page] of pages.entries())
    await expect.poll(() => seqOf(page), { timeout: 15_000 }).toBeGreaterThan(before[i]!);
}

async function openTabs(context: BrowserContext, n: number, token: string): Promise<Page[]> {
  await context.addInitScript((t) => localStorage.setItem('hloserve.token', t), token);
  const pages: Page[] = [];
  for (let i = 0; i < n; i++) {
    const page = await context.newPage();
    const c = new ConsolePage(page, engine.consoleUrl);
    await c.open('/');
    await c.expectLive();
    pages.push(page);
  }
  return pages;
}

test('four tabs of one browser hold one feed connection, and each shows the live updates', async ({ browser }) => {
  expect(await feedClients()).toBe(0);
  const context = await browser.newContext();
  const pages = await openTabs(context, 4, admin);
  await expect.poll(feedClients).toBe(1);
  await expectLiveUpdates(pages);
  await context.close();
  await expect.poll(feedClients).toBe(0);
});

test('closing the tab that holds the feed hands it to another within seconds; the others stay live', async ({
  browser,
}) => {
  const context = await browser.newContext();
  const pages = await openTabs(context, 3, admin);
  await expect.poll(feedClients).toBe(1);
  // The first tab took the lock first: it holds the socket.
  await pages[0]!.close();
  const rest = pages.slice(1);
  await expect.poll(feedClients, { timeout: 5_000 }).toBe(1);
  for (const page of rest) await new ConsolePage(page, engine.consoleUrl).expectLive();
  await expectLiveUpdates(rest);
  await context.close();
  await expect.poll(feedClients).toBe(0);
});

test("a sign-out or a sign-in in one tab is the whole browser's: the other tabs follow at once, on one feed", async ({
  browser,
  request,
}) => {
  const created = await request.post(`${engine.consoleUrl}/api/v1/tokens`, {
    headers: { authorization: `Bearer ${admin}` },
    data: { name: 'tabs-viewer', scope: 'viewer' },
  });
  expect(created.status()).toBe(201);
  const viewer = ((await created.json()) as { data: { token: string } }).data.token;
  const context = await browser.newContext();
  const [first, second] = (await openTabs(context, 2, admin)) as [Page, Page];
  await expect.poll(feedClients).toBe(1);
  await second.getByRole('button', { name: 'Sign out' }).click();
  // The other tab shows no more of the engine than the one signed out.
  for (const page of [first, second]) await expect(page.getByTestId('setup')).toBeVisible();
  await first.getByRole('button', { name: 'I have an API token' }).click();
  const setup = new SetupPage(first);
  await setup.tokenInput().fill(viewer);
  await setup.submit();
  for (const page of [first, second]) {
    await new ConsolePage(page, engine.consoleUrl).expectLive();
    await expect(page.getByTestId('read-only')).toBeVisible();
  }
  await expect.poll(feedClients).toBe(1);
  await expectLiveUpdates([first, second]);
  await context.close();
  await expect.poll(feedClients).toBe(0);
});

test('a screen that shows no residency holds only its own topics; the shell still shows the control mode', async ({
  browser,
}) => {
  const context = await browser.newContext();
  await context.addInitScript((t) => localStorage.setItem('hloserve.token', t), admin);
  const page = await context.newPage();
  const subscribed = new Set<string>();
  page.on('websocket', (ws) =>
    ws.on('framesent', ({ payload }) => {
      const msg = JSON.parse(String(payload)) as { type?: string; topics?: string[] };
      if (msg.type === 'subscribe') for (const t of msg.topics ?? []) subscribed.add(t);
    }),
  );
  const c = new ConsolePage(page, engine.consoleUrl);
  await c.open('/activity');
  await c.expectLive();
  // The mode comes from the worker list, read once; the residency topic (a delta a second under load) is not held.
  await expect(page.getByTestId('who')).toContainText('mode');
  await expect.poll(() => [...subscribed].sort()).toEqual(['events']);
  await context.close();
});
