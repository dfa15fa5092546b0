/**
 * The console against the real engine on the CPU plugin, with a fresh database: the engine serves
 * the built console and the control API (/api/v1) on its console port.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from '@playwright/test';
import { ConsolePage, ModelsPage, SetupPage } from './ConsolePage.js';
import { exampleModels, setupTokenFromLogs, startEngine } from './engine.mjs';

const rows = (n: number) => `${n} of ${n} models`;

type Engine = Awaited<ReturnType<typeof startEngine>>;

let engine: Engine;
let adminToken: string | null = null;
const shots = join(import.meta.dirname, 'artifacts', 'screenshots-engine');

test.describe.configure({ mode: 'serial' });

test.beforeAll(async () => {
  test.setTimeout(240_000);
  engine = await startEngine();
  mkdirSync(shots, { recursive: true });
  console.log(`console specs: engine and browser at ${engine.consoleUrl}`);
});

test.afterAll(async () => {
  await engine?.stop();
});

test('first run: the setup token from the log becomes an admin token, and the models appear live', async ({ page }) => {
  const token = setupTokenFromLogs(engine.logs);
  expect(token, 'the engine logs a setup token (or #setup= link) at first start').not.toBeNull();
  await page.goto(`${engine.consoleUrl}/#setup=${token}`);
  expect(new URL(page.url()).hash).toBe('');
  const setup = new SetupPage(page);
  await setup.submit();
  adminToken = await setup.adminToken().innerText();
  await setup.continue();
  const c = new ConsolePage(page, engine.consoleUrl);
  await c.expectLive();
  await c.open('/models');
  const models = new ModelsPage(page);
  await expect(models.rowCount()).toHaveText(rows(exampleModels.length), { timeout: 30_000 });
  for (const name of exampleModels) await expect(page.getByRole('link', { name, exact: true })).toBeVisible();
  for (const [name, path] of [
    ['overview', '/'],
    ['models', '/models'],
    ['model-detail', '/models/mlp'],
    ['memory-map', '/memory'],
    ['activity', '/activity'],
    ['settings', '/settings'],
  ] as const) {
    await c.open(path);
    await expect(page.locator('h1').first()).toBeVisible();
    if (name === 'settings') {
      // The engine's own store: a fresh SQLite file with every migration applied.
      await expect(page.getByTestId('settings-store')).toHaveAttribute('data-reachable', 'true');
      await expect(page.getByTestId('settings-store')).toContainText(
        /SQLite at .*hloserve\.sqlite · reachable, [\d.]+ ms round trip · migrations (\d+) of \1/,
      );
    }
    await page.screenshot({ path: join(shots, `${name}-desktop.png`) });
  }
});

test('the setup token works once', async ({ request }) => {
  test.skip(adminToken === null, 'first run did not complete');
  const token = setupTokenFromLogs(engine.logs);
  const r = await request.post(`${engine.consoleUrl}/api/v1/setup`, { data: { setupToken: token } });
  expect(r.status()).toBe(401);
});

test('a viewer token sees no mutate controls, and its API calls are refused', async ({ page, request }) => {
  test.skip(adminToken === null, 'first run did not complete');
  const created = await request.post(`${engine.consoleUrl}/api/v1/tokens`, {
    headers: { authorization: `Bearer ${adminToken}` },
    data: { name: 'e2e-viewer', scope: 'viewer' },
  });
  expect(created.status()).toBe(201);
  const viewer = ((await created.json()) as { data: { token: string } }).data.token;
  const c = new ConsolePage(page, engine.consoleUrl);
  await c.open('/models', viewer);
  await expect(page.getByTestId('read-only')).toBeVisible();
  await expect(new ModelsPage(page).rows().first()).toBeVisible();
  for (const path of ['/', '/models', '/models/mlp', '/memory', '/upload', '/activity', '/settings']) {
    await c.open(path);
    await expect(page.locator('h1').first()).toBeVisible();
    await expect(c.mutateControls()).toHaveCount(0);
  }
  const refused = await request.post(`${engine.consoleUrl}/api/v1/models/mlp/unload`, {
    headers: { authorization: `Bearer ${viewer}` },
  });
  expect(refused.status()).toBe(403);
});

test('the engine restarts: the console reconnects and resyncs without a reload', async ({ page }) => {
  test.skip(adminToken === null, 'first run did not complete');
  test.setTimeout(300_000);
  const c = new ConsolePage(page, engine.consoleUrl);
  await c.open('/models', adminToken!);
  await expect(new ModelsPage(page).rowCount()).toHaveText(rows(exampleModels.length), { timeout: 30_000 });
  await c.expectLive();
  await page.evaluate(() => ((window as unknown as { sameDocument: boolean }).sameDocument = true));
  const { dir, consolePort } = engine;
  await engine.stop({ keep: true });
  await expect(c.banner()).toHaveAttribute('data-state', 'reconnecting', { timeout: 30_000 });
  // The same database and address: the admin token is still good, the feed's seqs start over.
  engine = await startEngine({ dir, consolePort });
  await expect(c.banner()).toHaveAttribute('data-state', /resynced|live/, { timeout: 120_000 });
  await expect(new ModelsPage(page).rowCount()).toHaveText(rows(exampleModels.length));
  expect(await page.evaluate(() => (window as unknown as { sameDocument?: boolean }).sameDocument)).toBe(true);
  await page.screenshot({ path: join(shots, 'after-restart-desktop.png') });
});
