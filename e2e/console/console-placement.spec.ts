/**
 * The Placement screen against a real fleet: two CPU workers behind the supervisor, the console
 * served through the gateway's console port (placements are the gateway's, the rest worker0's).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from '@playwright/test';
import { MemoryMapPage } from './ConsolePage.js';
import { startEngine } from './engine.mjs';

type Engine = Awaited<ReturnType<typeof startEngine>>;
let engine: Engine;
let token: string | null = null;
const shots = join(import.meta.dirname, 'artifacts', 'screenshots-placement');

test.describe.configure({ mode: 'serial' });

test.beforeAll(async () => {
  test.setTimeout(300_000);
  engine = await startEngine({
    timeoutMs: 280_000,
    env: { HLOSERVE_MODELS_INCLUDE: 'mlp' },
    args: ['--workers', '2', '--base-port', '0', '--routing', 'lpt_packing'],
  });
  // Each worker logs a setup token at first start (one store): the latest issued is the valid one.
  const found = engine.logs
    .map((l) => (/#setup=([A-Za-z0-9._~-]+)/.exec(l) ?? /"setupToken"\s*:\s*"([^"]+)"/.exec(l))?.[1])
    .filter((t): t is string => t !== undefined)
    .reverse();
  for (const setupToken of new Set(found)) {
    const r = await fetch(`${engine.consoleUrl}/api/v1/setup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ setupToken }),
    });
    if (r.status === 201) {
      token = ((await r.json()) as { data: { token: string } }).data.token;
      break;
    }
  }
  mkdirSync(shots, { recursive: true });
});

test.afterAll(async () => {
  await engine?.stop();
});

test('the fleet shows a Placement screen: models x workers, and an operator adds a replica, audited', async ({
  page,
}) => {
  expect(token, 'a setup token exchanged through the gateway').not.toBeNull();
  await page.addInitScript((t) => localStorage.setItem('hloserve.token', t), token!);
  await page.goto(`${engine.consoleUrl}/placement`);
  await expect(page.getByRole('link', { name: 'Placement' })).toBeVisible();
  await expect(page.getByTestId('placement-mode')).toContainText('lpt_packing');
  const row = page.getByTestId('placement-row-mlp');
  await expect(row).toBeVisible();
  await expect(row).toContainText('1 / 1');
  await page.screenshot({ path: join(shots, 'before.png'), fullPage: true });
  await page.getByTestId('add-mlp').click();
  await expect(row).toContainText('2 / 2');
  await expect(page.getByTestId('placement-audit')).toContainText('placement.add_replica');
  await page.screenshot({ path: join(shots, 'after-add.png'), fullPage: true });
  // One replica back: the button is refused at one, with its reason.
  await page.getByTestId('remove-mlp').click();
  await expect(row).toContainText('1 / 1');
  await expect(page.getByTestId('remove-mlp')).toBeDisabled();
});

test('the worker picker shows another worker’s screens: its own pins, kept in the URL across screens', async ({
  page,
}) => {
  expect(token).not.toBeNull();
  // Only worker1 holds mlp pinned on its device: what its screens show and worker0's must not.
  const pin = await fetch(`${engine.consoleUrl}/api/v1/models/mlp/pin?worker=worker1`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ residency: 'device' }),
  });
  expect(pin.status, await pin.text()).toBe(200);
  const unknown = await fetch(`${engine.consoleUrl}/api/v1/models?worker=worker9`, {
    headers: { authorization: `Bearer ${token}` },
  });
  expect(unknown.status).toBe(404);

  await page.addInitScript((t) => localStorage.setItem('hloserve.token', t), token!);
  await page.goto(`${engine.consoleUrl}/memory?worker=worker0`);
  const picker = page.getByTestId('worker-picker');
  await expect(picker).toHaveValue('worker0');
  await expect(picker.locator('option')).toHaveText(['worker0', 'worker1']);
  const map = new MemoryMapPage(page);
  await expect(page.getByTestId('resident-blocks')).toBeVisible();
  await expect(map.pinnedBlock('mlp')).toHaveCount(0);
  // The device card names the worker as the picker does (its node.yaml name, not the server's).
  await expect(page.getByRole('region', { name: 'device 0 of worker0' })).toBeVisible();

  // Keyboard: focus the picker and choose the next worker.
  await picker.focus();
  await picker.selectOption('worker1');
  await expect(page).toHaveURL(/\/memory\?worker=worker1$/);
  await expect(map.pinnedBlock('mlp')).toBeVisible({ timeout: 30_000 });
  await expect(page.getByRole('region', { name: 'device 0 of worker1' })).toContainText('worker worker1');
  await expect(page.getByTestId('connection-banner')).not.toContainText('reconnecting', { timeout: 15_000 });
  await page.screenshot({ path: join(shots, 'picker-worker1-1440.png') });

  // Another screen keeps the worker; the model table is worker1's (mlp pinned there).
  await page.getByRole('navigation', { name: 'screens' }).getByRole('link', { name: 'Models' }).click();
  await expect(page).toHaveURL(/\/models\?worker=worker1$/);
  await expect(page.getByRole('main')).toContainText('mlp');

  // From the Placement screen, a worker's name opens that worker's screens.
  await page.getByRole('navigation', { name: 'screens' }).getByRole('link', { name: 'Placement' }).click();
  await page.getByRole('link', { name: "open worker0's screens" }).click();
  await expect(page).toHaveURL(/\/\?worker=worker0$/);
  await expect(page.getByTestId('worker-picker')).toHaveValue('worker0');

  // Back to worker0's memory map: its own data again, never worker1's under its name.
  await page.goto(`${engine.consoleUrl}/memory?worker=worker0`);
  await expect(page.getByTestId('resident-blocks')).toBeVisible();
  await expect(map.pinnedBlock('mlp')).toHaveCount(0);

  await page.setViewportSize({ width: 414, height: 896 });
  await page.goto(`${engine.consoleUrl}/memory?worker=worker1`);
  await expect(page.getByTestId('worker-picker')).toBeVisible();
  await expect(page.getByTestId('worker-picker')).toHaveValue('worker1');
  await expect(map.pinnedBlock('mlp')).toBeVisible({ timeout: 30_000 });
  await page.screenshot({ path: join(shots, 'picker-worker1-414.png') });
  await expect(page.getByTestId('feed-worker')).toHaveText('worker worker1');
  await page.getByRole('button', { name: 'switch to dark theme' }).click();
  await page.screenshot({ path: join(shots, 'picker-worker1-414-dark.png') });
});
