/**
 * dynamic mode's look at the repository, on a thread of its own: the same signatures as the
 * serving thread's own reading of a bundle (lifecycle.ts records those, and the watcher compares
 * the two: any difference would reload every model at every scan), the same bundles, and a thread
 * closed fails only the scan under way.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, suite, test } from 'node:test';
import { bundleSignature } from '../../src/registry/bundle-signature.js';
import { RepositoryScanner } from '../../src/registry/repository-scan.js';

suite('the repository scan thread', () => {
  const repo = mkdtempSync(join(tmpdir(), 'hloserve-scan-'));
  const scanner = new RepositoryScanner();
  after(async () => {
    await scanner.close();
    rmSync(repo, { recursive: true, force: true });
  });
  const bundle = (name: string, files: Record<string, string>) => {
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(join(repo, name, path, '..'), { recursive: true });
      writeFileSync(join(repo, name, path), text);
    }
  };
  bundle('a', {
    'manifest.yaml': 'name: a',
    'model.b1.mlir': 'x',
    'weights.safetensors': 'yy',
    'extra/vocab.txt': 'z',
  });
  bundle('b', { 'manifest.yaml': 'name: b', 'deep/er/still/file.bin': 'w'.repeat(1000) });
  bundle('no-manifest', { 'model.b1.mlir': 'x' });
  bundle('.hidden', { 'manifest.yaml': 'name: hidden' });
  writeFileSync(join(repo, 'stray-file'), '');

  test('the bundles, with the signatures the serving thread reads', async () => {
    const seen = await scanner.observe(repo, []);
    assert.deepEqual([...seen.keys()].sort(), ['a', 'b']);
    for (const name of ['a', 'b']) assert.deepEqual(seen.get(name), await bundleSignature(join(repo, name)), name);
    assert.match(seen.get('a')!.files, /^extra\/vocab\.txt 1 \d+\nmanifest\.yaml 7 \d+\nmodel\.b1\.mlir 1 \d+\n/);
    assert.deepEqual([...(await scanner.observe(repo, ['b', 'nope'])).keys()], ['b']);
    assert.deepEqual(await scanner.observe(join(repo, 'missing'), []), new Map(), 'no repository: no bundles');
  });

  test('a thread closed fails the scan under way; the next scan starts another', async () => {
    // Also when the thread had answered before it was stopped (the answer is not delivered then).
    const failed = assert.rejects(scanner.observe(repo, []), /closed/);
    await scanner.close();
    await failed;
    assert.equal((await scanner.observe(repo, [])).size, 2);
  });
});
