/**
 * Upload a bundle from the console, watch its steps, then infer on it from the model's "Try it"
 * tab: the engine (dynamic mode, CPU plugin, its own repository copy) runs the bundle's
 * reference input and the console shows that the answer matches the reference output. A second
 * upload of the same name keeps the first as a version, and a rollback from the Versions tab puts
 * it back. Screenshots of the detail tabs at 1440x900 and 414x896 go to artifacts/.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, cpSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { expect, test, type Page } from '@playwright/test';
import { ConsolePage } from './ConsolePage.js';
import { ModelDetailPage, UploadPage } from './ScreenPages.js';
import { adminToken, startEngine } from './engine.mjs';

type Engine = Awaited<ReturnType<typeof startEngine>>;
let engine: Engine;
let token: string | null = null;
// Made in beforeAll, not on import: Playwright also imports the file to list its tests, and that
// process never runs afterAll to remove it.
let work: string;
const shots = join(import.meta.dirname, 'artifacts', 'screenshots-detail');
const MODEL = 'mlp-tried';

test.describe.configure({ mode: 'serial' });

test.beforeAll(async () => {
  test.setTimeout(240_000);
  mkdirSync(shots, { recursive: true });
  work = mkdtempSync(join(tmpdir(), 'hloserve-try-it-e2e-'));
  engine = await startEngine({ env: { HLOSERVE_MODEL_CONTROL_MODE: 'dynamic', HLOSERVE_MODEL_POLL_SECONDS: '1' } });
  token = await adminToken(engine);
});

test.afterAll(async () => {
  await engine?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

/** The mlp bundle as a tar with its files at the top level; `description` marks the copy. */
function archive(name: string, description: string): string {
  const dir = join(work, `${name}-bundle`);
  rmSync(dir, { recursive: true, force: true });
  cpSync(resolve(import.meta.dirname, '..', '..', 'examples', 'models', 'mlp'), dir, { recursive: true });
  const manifest = join(dir, 'manifest.yaml');
  writeFileSync(manifest, readFileSync(manifest, 'utf8').replace(/^description: .*$/m, `description: ${description}`));
  const out = join(work, `${name}.tar`);
  execFileSync('tar', ['-cf', out, '-C', dir, ...readdirSync(dir)]);
  return out;
}

async function upload(page: Page, file: string): Promise<string[]> {
  const c = new ConsolePage(page, engine.consoleUrl);
  await c.open('/upload', token!);
  const u = new UploadPage(page);
  await u.choose(file);
  await expect(u.modelName()).toHaveValue(MODEL);
  await u.watchSteps();
  await u.start();
  await expect(u.progress()).toHaveAttribute('data-step', /done|failed/, { timeout: 180_000 });
  await expect(u.progress(), 'the upload ends installed and loaded').toHaveAttribute('data-step', 'done');
  return u.stepsSeen();
}

async function shoot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(shots, `${name}-desktop.png`) });
  await page.getByRole('button', { name: 'switch to dark theme' }).click();
  await page.screenshot({ path: join(shots, `${name}-desktop-dark.png`) });
  await page.getByRole('button', { name: 'switch to light theme' }).click();
  await page.setViewportSize({ width: 414, height: 896 });
  await page.screenshot({ path: join(shots, `${name}-phone.png`) });
  // The shell scrolls inside <main>: the rest of the screen is a second picture.
  await page.locator('main').evaluate((m) => m.scrollTo(0, m.scrollHeight));
  await page.screenshot({ path: join(shots, `${name}-phone-end.png`) });
  await page.locator('main').evaluate((m) => m.scrollTo(0, 0));
  await page.setViewportSize({ width: 1440, height: 900 });
}

test('upload a bundle, watch the steps, then infer on it from "Try it"', async ({ page }) => {
  test.setTimeout(300_000);
  const steps = await upload(page, archive(MODEL, 'first upload'));
  // A 2 MB archive goes up in one chunk, often before React paints "uploading"; validation (with
  // its trial compile) takes seconds and is always seen.
  expect(
    steps.filter((s) => s !== 'uploading'),
    'validated, then done, nothing else',
  ).toEqual(['validating', 'done']);

  await page.getByRole('navigation', { name: 'screens' }).getByRole('link', { name: 'Models' }).click();
  await page.getByRole('link', { name: MODEL, exact: true }).click();
  const d = new ModelDetailPage(page);
  await expect(page.locator('h1')).toContainText(MODEL);
  await expect(d.inputs()).toContainText('fn → nf');
  await expect(d.inputs()).toContainText('[N, 784]');
  await shoot(page, 'detail-overview');

  await d.tab('Try it');
  await expect(d.curl()).toContainText(`/v2/models/${MODEL}/infer`);
  await d.tryButton().click();
  await expect(d.tryResult()).toBeVisible({ timeout: 60_000 });
  await expect(d.tryVerdict()).toContainText('matches the reference output');
  await expect(d.tryOutputs()).toContainText('logits');
  await expect(d.tryOutputs()).toContainText('[4, 10]');
  await expect(page.getByTestId('request-json')).toBeVisible();
  await shoot(page, 'detail-try-it');

  await d.tab('Performance');
  await expect(d.latencyHistogram()).toContainText(/[1-9]\d* requests? · p50/);
  await expect(d.batchHistogram()).toContainText(/[1-9]\d* rows served/);
  // The charts' library loads on first use: shot before it, the two charts were blank boxes.
  await expect(page.locator('.spark canvas')).toHaveCount(2);
  await shoot(page, 'detail-performance');

  await d.tab('Residency');
  await expect(page.getByTestId('residency-events')).toContainText('loaded');
  await shoot(page, 'detail-residency');
});

test('a second upload keeps the first as a version, and the Versions tab rolls back to it', async ({ page }) => {
  test.setTimeout(300_000);
  await upload(page, archive(MODEL, 'second upload'));
  const c = new ConsolePage(page, engine.consoleUrl);
  await c.open(`/models/${MODEL}`, token!);
  const d = new ModelDetailPage(page);
  await expect(page.getByTestId('model-io')).toContainText('second upload');
  await d.tab('Versions');
  await expect(d.versionRows()).toHaveCount(2);
  await expect(d.versionRows().nth(1)).toContainText('first upload');
  await shoot(page, 'detail-versions');
  await d.versionRows().nth(1).getByTestId('action-rollback').click();
  await expect(page.getByTestId('rollback-confirm')).toBeVisible();
  await page.getByTestId('rollback-apply').click();
  await expect(page.getByTestId('rollback-confirm')).toHaveCount(0, { timeout: 120_000 });
  await expect(d.versionRows().first()).toContainText('first upload');
  // The replaced version is kept in turn: the second upload is now the one to roll back to.
  await expect(d.versionRows()).toHaveCount(2);
  await expect(d.versionRows().nth(1)).toContainText('second upload');
  await d.tab('Overview');
  await expect(page.getByTestId('model-io')).toContainText('first upload');
  const audit = await fetch(`${engine.consoleUrl}/api/v1/audit?target=model:${MODEL}`, {
    headers: { authorization: `Bearer ${token}` },
  }).then((r) => r.json() as Promise<{ data: { action: string; result: string }[] }>);
  expect(audit.data.filter((a) => a.action === 'model.rollback').map((a) => a.result)).toEqual(['ok']);
});
