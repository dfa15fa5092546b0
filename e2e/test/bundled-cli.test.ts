import assert from 'node:assert/strict';
import { isAscii } from 'node:buffer';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, suite, test } from 'node:test';
import { InferenceClient, tensor } from '@hloserve/client';
import { repoRoot, startServer, type ServerProcess } from '../src/server-process.js';

// The server the e2e suites start is the CLI as scripts/bundle-engine.mjs bundled it. What the
// bundle could break without any other suite noticing: a module that patches another package's
// internals must patch the bundled copy, and files found from a module's own location (the
// console's assets, the migrations, thread entry points) must still be found.
const bundleDir = join(repoRoot, 'engine', 'dist', 'bundle');
const entry = join(bundleDir, 'cli.js');
/** What a copy of the bundle needs to run: the entry point, the files it runs, the bundle. */
const bundleFiles = ['cli.js', 'bundled-start.js', 'bundle-code-cache.js', 'node-code-cache.js', 'cli.cjs'];
const x1 = () => ({ x: tensor(new Float32Array(784).fill(0.5), [1, 784]) });

suite('the bundled CLI (engine/dist/bundle/cli.js)', () => {
  let server: ServerProcess;

  before(async () => {
    server = await startServer({ HLOSERVE_MODELS_INCLUDE: 'mlp' });
  });
  after(async () => {
    assert.equal(await server.stop(), 0);
  });

  test('is what the server runs, with a source map beside it', () => {
    assert.ok(server.child.spawnargs.includes(entry), server.child.spawnargs.join(' '));
    const bundle = join(bundleDir, 'cli.cjs');
    assert.match(readFileSync(bundle, 'utf8'), /\/\/# sourceMappingURL=cli\.cjs\.map\s*$/);
    assert.ok(existsSync(`${bundle}.map`));
  });

  test("names the Node modules the bundle imports, which the entry point loads from Node's code cache", () => {
    const list = /const BUILT_NODE_MODULES = (\[.*\]);/.exec(readFileSync(join(bundleDir, 'bundled-start.js'), 'utf8'));
    assert.ok(list, 'the bundle script filled in the list');
    const names = JSON.parse(list[1]!) as string[];
    for (const m of ['http2', 'tls', 'worker_threads', 'crypto']) assert.ok(names.includes(m), m);
  });

  test('is ASCII, so the entry point decodes it on the fast path (Latin-1)', () => {
    assert.ok(isAscii(readFileSync(join(bundleDir, 'cli.cjs'))));
  });

  test('a ready server leaves a code cache beside the bundle; a start that used it does not rewrite it, one that found it damaged does', async () => {
    // A copy of the bundle at the same depth (its files are found relative to it), with no cache.
    const copy = mkdtempSync(join(repoRoot, 'engine', 'dist', 'bundle-test-'));
    try {
      for (const f of bundleFiles) copyFileSync(join(bundleDir, f), join(copy, f));
      const caches = () => readdirSync(copy).filter((f) => f.endsWith('.v8cache'));
      const first = await startServer({ HLOSERVE_MODELS_INCLUDE: 'mlp' }, undefined, [], join(copy, 'cli.js'));
      for (let i = 0; i < 50 && caches().length === 0; i++) await new Promise((r) => setTimeout(r, 100));
      assert.equal(await first.stop(), 0);
      assert.equal(caches().length, 1, `code caches: ${caches().join(', ')}`);
      const file = join(copy, caches()[0]!);
      const written = statSync(file).mtimeMs;
      const second = await startServer({ HLOSERVE_MODELS_INCLUDE: 'mlp' }, undefined, [], join(copy, 'cli.js'));
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(await second.stop(), 0);
      assert.equal(statSync(file).mtimeMs, written, 'the cache was accepted, so not written again');

      // Damaged inside (its header intact, so V8 would take it and abort): not used, rewritten.
      const damaged = readFileSync(file);
      damaged[damaged.length >> 1]! ^= 0xff;
      writeFileSync(file, damaged);
      const third = await startServer({ HLOSERVE_MODELS_INCLUDE: 'mlp' }, undefined, [], join(copy, 'cli.js'));
      for (let i = 0; i < 50 && statSync(file).size === damaged.length && readFileSync(file).equals(damaged); i++)
        await new Promise((r) => setTimeout(r, 100));
      assert.equal(await third.stop(), 0);
      assert.ok(!readFileSync(file).equals(damaged), 'a damaged cache is rewritten');
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });

  test("where the bundle's directory takes no cache, it goes under $HLOSERVE_CACHE_DIR; with neither, a start serves without one", async () => {
    const copy = mkdtempSync(join(repoRoot, 'engine', 'dist', 'bundle-test-'));
    const cacheDir = mkdtempSync(join(tmpdir(), 'hlo-code-cache-'));
    try {
      for (const f of bundleFiles) copyFileSync(join(bundleDir, f), join(copy, f));
      // A directory where the cache file goes: the rename onto it fails, as a write into a
      // read-only tree would (the tests run as root, whom file modes do not stop).
      const cacheName = `cli.cjs.${process.version}-${process.arch}.v8cache`;
      mkdirSync(join(copy, cacheName, 'occupied'), { recursive: true });
      const serveOnce = async (env: Record<string, string>) => {
        const s = await startServer({ HLOSERVE_MODELS_INCLUDE: 'mlp', ...env }, undefined, [], join(copy, 'cli.js'));
        try {
          await new Promise((r) => setTimeout(r, 1000));
          const c = new InferenceClient({ url: s.grpcUrl(), protocol: 'grpc' });
          try {
            assert.ok((await c.model('mlp').infer(x1())).outputs.length > 0);
          } finally {
            await c.close();
          }
        } finally {
          assert.equal(await s.stop(), 0);
        }
      };
      // Nowhere to write (a file where the cache directory's code-cache/ would go): no cache, no
      // partial file.
      const blocked = join(cacheDir, 'blocked');
      mkdirSync(blocked);
      writeFileSync(join(blocked, 'code-cache'), '');
      await serveOnce({ HLOSERVE_CACHE_DIR: blocked });
      assert.deepEqual(readdirSync(copy).sort(), [...bundleFiles, cacheName].sort());
      assert.equal(statSync(join(blocked, 'code-cache')).size, 0);
      // With a cache directory: written there, and the next start uses it (so does not rewrite it).
      const writable = join(cacheDir, 'writable');
      const kept = join(writable, 'code-cache', cacheName);
      await serveOnce({ HLOSERVE_CACHE_DIR: writable });
      assert.ok(existsSync(kept), 'the code cache is under $HLOSERVE_CACHE_DIR/code-cache');
      const written = statSync(kept).mtimeMs;
      await serveOnce({ HLOSERVE_CACHE_DIR: writable });
      assert.equal(statSync(kept).mtimeMs, written, 'the cache was used, so not written again');
      assert.deepEqual(readdirSync(copy).sort(), [...bundleFiles, cacheName].sort());
    } finally {
      rmSync(copy, { recursive: true, force: true });
      rmSync(cacheDir, { recursive: true, force: true });
    }
  });

  test('a gRPC deadline 30 days away is served from the bundle (the frame server clamps it)', async () => {
    const c = new InferenceClient({ url: server.grpcUrl(), protocol: 'grpc' });
    try {
      const r = await c.model('mlp').infer(x1(), { deadline: new Date(Date.now() + 30 * 86_400_000) });
      assert.ok(r.outputs.length > 0);
    } finally {
      await c.close();
    }
  });

  test("the console's page and the control API's lazily compiled schemas are found from the bundle", async () => {
    const page = await fetch(`http://127.0.0.1:${server.ports.console}/`);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /<html/i);
    // A route with a request schema: its validator (Ajv, loaded on first use) answers the bad body.
    const bad = await fetch(`http://127.0.0.1:${server.ports.console}/api/v1/setup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token: 7 }),
    });
    assert.equal(bad.status, 400, await bad.text());
  });
});
