/**
 * Pinning under eviction pressure, against the real engine on the CPU plugin with a weight budget
 * of 5 MiB: fno (2.4 MB) and resnet (4.3 MB) cannot both be on the device, so traffic that
 * alternates between them makes each evict the other. mlp (2.3 MB), pinned on the device from the
 * console, sits outside the budget and must stay while they come and go, and the console must say
 * why each of the others left.
 */
import { join } from 'node:path';
import { expect, test } from '@playwright/test';
import { ConsolePage, MemoryMapPage, ModelDetailPage } from './ConsolePage.js';
import { adminToken, startEngine } from './engine.mjs';
import { inferZeros } from './kserve.mjs';

type Engine = Awaited<ReturnType<typeof startEngine>>;
let engine: Engine;
let token = '';
const shots = join(import.meta.dirname, 'artifacts', 'screenshots-engine');
const BUDGET = 5 * 2 ** 20;

interface Residency {
  floor: string;
  deviceResident: boolean;
  evictions: number;
}
async function residency(name: string): Promise<Residency> {
  const r = await fetch(`${engine.consoleUrl}/api/v1/models/${name}`, {
    headers: { authorization: `Bearer ${token}` },
  });
  expect(r.status).toBe(200);
  return ((await r.json()) as { data: { residency: Residency } }).data.residency;
}

test.describe.configure({ mode: 'serial' });

test.beforeAll(async () => {
  test.setTimeout(240_000);
  engine = await startEngine({ env: { HLOSERVE_RUNTIME_WEIGHT_CACHE_BYTES: String(BUDGET) } });
  token = await adminToken(engine);
});

test.afterAll(async () => {
  await engine?.stop();
});

test('a model pinned on the device stays resident under eviction pressure while the others are evicted, each with its reason', async ({
  page,
}) => {
  test.setTimeout(180_000);
  const c = new ConsolePage(page, engine.consoleUrl);
  const detail = new ModelDetailPage(page);
  await c.open('/models/mlp', token);
  await c.expectLive();
  await detail.pinOnDevice();
  // The summary follows the feed: the floor is the device and the weights are uploaded there.
  await expect(detail.actions()).toContainText('pin: device', { timeout: 30_000 });
  await expect(detail.actions()).toContainText('weights on device', { timeout: 30_000 });
  const pinned = await residency('mlp');
  expect(pinned).toMatchObject({ floor: 'device', deviceResident: true });

  // The memory map stays open (live) while the traffic runs.
  await c.nav('Memory').click();
  const map = new MemoryMapPage(page);
  await expect(map.pinnedBlock('mlp')).toBeVisible();
  const before = { fno: (await residency('fno')).evictions, resnet: (await residency('resnet')).evictions };
  for (let round = 0; round < 4; round++) {
    for (const model of ['fno', 'resnet', 'mlp']) expect(await inferZeros(engine.httpUrl, model)).toBe(200);
  }
  const fno = await residency('fno');
  const resnet = await residency('resnet');
  // Each switch between fno and resnet evicts the one that was there: 7 switches in 4 rounds.
  expect(fno.evictions - before.fno + resnet.evictions - before.resnet).toBeGreaterThanOrEqual(6);
  expect(await residency('mlp')).toMatchObject({ floor: 'device', deviceResident: true, evictions: pinned.evictions });

  // The console, without a reload: mlp still pinned, and resnet (the last served) resident.
  await expect(map.pinnedBlock('mlp')).toBeVisible();
  await expect(map.residentBlocks()).toContainText('resnet', { timeout: 15_000 });
  await expect(map.residentBlocks()).not.toContainText('fno');
  await page.screenshot({ path: join(shots, 'memory-map-pressure-desktop.png') });

  // fno's residency timeline names why it left; mlp's shows no eviction since its pin.
  await c.nav('Models').click();
  await page.getByRole('link', { name: 'fno', exact: true }).click();
  await detail.tab('Residency');
  const evicted = detail.timelineRows().filter({ hasText: /evicted/ });
  await expect(evicted.first()).toBeVisible({ timeout: 15_000 });
  expect(await evicted.count()).toBeGreaterThanOrEqual(fno.evictions - before.fno);
  await expect(evicted.first()).toContainText(/\b(lru|budget)\b/);
  await page.screenshot({ path: join(shots, 'residency-evicted-desktop.png') });

  await c.nav('Models').click();
  await page.getByRole('link', { name: 'mlp', exact: true }).click();
  const mlpTab = await detail.tab('Residency');
  await expect(mlpTab).toContainText('weights on');
  await expect(mlpTab.getByText('evictions', { exact: true }).locator('..')).toContainText(String(pinned.evictions));
});
