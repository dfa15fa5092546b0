import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, suite, test } from 'node:test';
import Fastify from 'fastify';
import { consoleFiles } from '../../src/control/api/console-files.js';

suite("the console's files on the console port", () => {
  // dist and the file beside it that must never be served share a temp dir, removed as one.
  const root = mkdtempSync(join(tmpdir(), 'hloserve-console-dist-'));
  const dist = join(root, 'dist');
  mkdirSync(join(dist, 'assets'), { recursive: true });
  writeFileSync(join(dist, 'index.html'), '<!doctype html><title>hloserve</title>');
  writeFileSync(join(dist, 'assets', 'app-1a2b.js'), 'console.log(1)');
  writeFileSync(join(dist, 'manifest.webmanifest'), '{}');
  writeFileSync(join(root, 'outside-dist.txt'), 'secret');
  const app = Fastify();
  consoleFiles(app, dist);
  after(async () => {
    await app.close();
    rmSync(root, { recursive: true, force: true });
  });

  test('hashed assets are served and cached for good; other files are revalidated', async () => {
    const js = await app.inject({ url: '/assets/app-1a2b.js' });
    assert.equal(js.statusCode, 200);
    assert.match(js.headers['content-type'] as string, /text\/javascript/);
    assert.match(js.headers['cache-control'] as string, /immutable/);
    const m = await app.inject({ url: '/manifest.webmanifest' });
    assert.equal(m.headers['content-type'], 'application/manifest+json');
    assert.equal(m.headers['cache-control'], 'no-cache');
  });

  test("the console's own routes get index.html; /api/ paths never do; nothing outside dist is read", async () => {
    for (const url of ['/', '/models/resnet', '/settings?tab=tokens']) {
      const r = await app.inject({ url });
      assert.equal(r.statusCode, 200, url);
      assert.match(r.body, /<title>hloserve<\/title>/, url);
    }
    const api = await app.inject({ url: '/api/v1/nothing' });
    assert.equal(api.statusCode, 404);
    assert.equal(api.json().code, 'HLO_ERR_NOT_FOUND');
    for (const url of ['/../outside-dist.txt', '/%2e%2e/outside-dist.txt', '/assets/../../outside-dist.txt']) {
      const r = await app.inject({ url });
      assert.doesNotMatch(r.body, /secret/, url);
    }
  });
});
