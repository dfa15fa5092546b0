/**
 * The queues and scheduler screen against the real engine under load: requests to two models
 * (sent through the control API's try-it route, the engine's own infer path) fill their queues;
 * the screen shows the discipline, each model's depth and oldest wait, and its share of device
 * time against its weight over time. An admin changes the discipline from there (audited).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from '@playwright/test';
import { ConsolePage } from './ConsolePage.js';
import { QueuesPage } from './ScreenPages.js';
import { adminToken, startEngine } from './engine.mjs';

type Engine = Awaited<ReturnType<typeof startEngine>>;
let engine: Engine;
let token: string | null = null;
const shots = join(import.meta.dirname, 'artifacts', 'screenshots-queues');

test.describe.configure({ mode: 'serial' });

test.beforeAll(async () => {
  test.setTimeout(240_000);
  mkdirSync(shots, { recursive: true });
  engine = await startEngine();
  token = await adminToken(engine);
});

test.afterAll(async () => {
  await engine?.stop();
});

/** Keeps `callers` requests in flight to each model until stopped; counts the answers. */
function load(models: readonly string[], callers: number): { stop: () => Promise<number> } {
  let running = true;
  let done = 0;
  const loop = async (model: string) => {
    while (running) {
      const r = await fetch(`${engine.consoleUrl}/api/v1/models/${model}/try`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}` },
      }).catch(() => null);
      if (r?.ok) done++;
      await r?.arrayBuffer();
    }
  };
  const loops = models.flatMap((m) => Array.from({ length: callers }, () => loop(m)));
  return {
    stop: async () => {
      running = false;
      await Promise.all(loops);
      return done;
    },
  };
}

test('queues under load: depth, oldest wait, device share against weight over time', async ({ page }) => {
  test.setTimeout(240_000);
  const c = new ConsolePage(page, engine.consoleUrl);
  await c.open('/queues', token!);
  const q = new QueuesPage(page);
  await expect(q.discipline()).toHaveText(/fair|fifo|edf/);
  const traffic = load(['mlp', 'resnet'], 12);
  try {
    // Somewhere in the run a queue is seen holding requests, with the wait of its oldest.
    await expect
      .poll(async () => Number(await page.getByTestId('queued-total').innerText()), {
        timeout: 60_000,
        intervals: [100],
      })
      .toBeGreaterThan(0);
    await expect(q.row('mlp')).toBeVisible();
    await expect(q.row('resnet')).toBeVisible();
    // Two polls with device time between them make the first points of the chart.
    await expect(q.shareChart()).toBeVisible({ timeout: 30_000 });
    await expect(q.row('mlp').getByRole('img')).toHaveAttribute('aria-label', /mlp: [1-9]\d*% of device time/, {
      timeout: 30_000,
    });
    await page.waitForTimeout(6_000);
    await page.screenshot({ path: join(shots, 'queues-desktop.png') });
    await page.getByRole('button', { name: 'switch to dark theme' }).click();
    await page.screenshot({ path: join(shots, 'queues-desktop-dark.png') });
    await page.getByRole('button', { name: 'switch to light theme' }).click();
    await page.setViewportSize({ width: 414, height: 896 });
    await page.screenshot({ path: join(shots, 'queues-phone.png') });
    await page.locator('main').evaluate((m) => m.scrollTo(0, m.scrollHeight));
    await page.screenshot({ path: join(shots, 'queues-phone-end.png') });
    await page.setViewportSize({ width: 1440, height: 900 });
  } finally {
    const answered = await traffic.stop();
    expect(answered).toBeGreaterThan(0);
  }
  await q.search().fill('resn');
  await expect(q.rows()).toHaveCount(1);
});

test('an admin changes the discipline from the queues screen, and it is audited', async ({ page }) => {
  const c = new ConsolePage(page, engine.consoleUrl);
  await c.open('/queues', token!);
  const q = new QueuesPage(page);
  await expect(q.discipline()).toHaveText('fair');
  await page.getByTestId('discipline-select').selectOption('edf');
  await page.getByTestId('action-discipline').click();
  await expect(q.discipline()).toHaveText('edf', { timeout: 10_000 });
  const audit = await fetch(`${engine.consoleUrl}/api/v1/audit`, {
    headers: { authorization: `Bearer ${token}` },
  }).then((r) => r.json() as Promise<{ data: { action: string; after: unknown }[] }>);
  expect(audit.data.some((a) => JSON.stringify(a).includes('edf'))).toBe(true);
});
