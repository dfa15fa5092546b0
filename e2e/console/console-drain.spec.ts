/**
 * Draining a model from its page, against the real engine: the drain is shown as it happens (the
 * models feed carries it), new requests are refused while it lasts, and the same page lifts it
 * with resume, without a reload.
 */
import { expect, test } from '@playwright/test';
import { ConsolePage, ModelDetailPage } from './ConsolePage.js';
import { adminToken, startEngine } from './engine.mjs';
import { inferZeros } from './kserve.mjs';

type Engine = Awaited<ReturnType<typeof startEngine>>;
let engine: Engine;
let token = '';

test.beforeAll(async () => {
  test.setTimeout(240_000);
  engine = await startEngine();
  token = await adminToken(engine);
});

test.afterAll(async () => {
  await engine?.stop();
});

test('an operator drains a model from its page, sees it drained, and resumes it there', async ({ page }) => {
  const c = new ConsolePage(page, engine.consoleUrl);
  const detail = new ModelDetailPage(page);
  expect(await inferZeros(engine.httpUrl, 'mlp')).toBe(200);
  await c.open('/models/mlp', token);
  await c.expectLive();
  await expect(detail.action('resume')).toHaveCount(0);
  await detail.action('drain').click();
  await expect(detail.drained()).toHaveText('drained', { timeout: 15_000 });
  await expect(detail.action('drain')).toHaveCount(0);
  expect(await inferZeros(engine.httpUrl, 'mlp')).toBe(503);

  await detail.action('resume').click();
  await expect(detail.drained()).toHaveCount(0, { timeout: 15_000 });
  await expect(detail.action('drain')).toBeEnabled();
  expect(await inferZeros(engine.httpUrl, 'mlp')).toBe(200);

  const audit = (await fetch(`${engine.consoleUrl}/api/v1/audit`, {
    headers: { authorization: `Bearer ${token}` },
  }).then((r) => r.json())) as { data: { action: string; target: string }[] };
  const actions = audit.data.filter((a) => a.target.includes('mlp')).map((a) => a.action);
  expect(actions).toEqual(expect.arrayContaining([expect.stringMatching(/drain/), expect.stringMatching(/resume/)]));
});
