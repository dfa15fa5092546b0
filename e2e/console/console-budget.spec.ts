/**
 * Changing the weight budget from the memory map, against the real engine on the CPU plugin: with
 * fno and then resnet served (both evictable, both on the device under an 8 MiB budget), the map
 * lists them least recently used first, a typed budget of 0 previews evicting both in that order,
 * and applying it evicts them at once; the engine reports the new budget.
 */
import { join } from 'node:path';
import { expect, test } from '@playwright/test';
import { ConsolePage, MemoryMapPage } from './ConsolePage.js';
import { adminToken, startEngine } from './engine.mjs';
import { inferZeros } from './kserve.mjs';

type Engine = Awaited<ReturnType<typeof startEngine>>;
let engine: Engine;
let token = '';
const shots = join(import.meta.dirname, 'artifacts', 'screenshots-engine');

async function api<T>(path: string): Promise<T> {
  const r = await fetch(`${engine.consoleUrl}/api/v1${path}`, { headers: { authorization: `Bearer ${token}` } });
  expect(r.status).toBe(200);
  return ((await r.json()) as { data: T }).data;
}
const onDevice = async (name: string) =>
  (await api<{ residency: { deviceResident: boolean } }>(`/models/${name}`)).residency.deviceResident;

test.describe.configure({ mode: 'serial' });

test.beforeAll(async () => {
  test.setTimeout(240_000);
  engine = await startEngine({ env: { HLOSERVE_RUNTIME_WEIGHT_CACHE_BYTES: String(8 * 2 ** 20) } });
  token = await adminToken(engine);
});

test.afterAll(async () => {
  await engine?.stop();
});

test('an admin previews a smaller budget on the memory map, least recently used first, and applies it', async ({
  page,
}) => {
  test.setTimeout(120_000);
  expect(await inferZeros(engine.httpUrl, 'fno')).toBe(200);
  expect(await inferZeros(engine.httpUrl, 'resnet')).toBe(200);
  expect(await onDevice('fno')).toBe(true);
  expect(await onDevice('resnet')).toBe(true);

  const c = new ConsolePage(page, engine.consoleUrl);
  await c.open('/memory', token);
  await c.expectLive();
  const map = new MemoryMapPage(page);
  await expect(map.residentBlocks()).toContainText(/fno[\s\S]*resnet/, { timeout: 15_000 });

  await page.getByTestId('budget-input').fill('0');
  await expect(page.getByTestId('evict-preview')).toContainText(/Would evict \d+: .*fno, .*resnet/);
  await page.screenshot({ path: join(shots, 'memory-map-budget-preview-desktop.png') });
  await page.getByTestId('budget-apply').click();

  await expect(map.residentBlocks()).toContainText('none', { timeout: 15_000 });
  expect(await onDevice('fno')).toBe(false);
  expect(await onDevice('resnet')).toBe(false);
  expect((await api<{ weightBudgetBytes: number | null }>('/settings')).weightBudgetBytes).toBe(0);
  await expect(page.getByTestId('budget-input')).toHaveValue('0');
});
