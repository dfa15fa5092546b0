import { test, suite, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ServeError } from '@hloserve/common/errors';
import { discoverBundles, repositoryHasHooks } from '../../src/bundle/discover.js';
import { removeDir, tempDir, writeMlpBundle } from './fixtures.js';

suite('discoverBundles', () => {
  let repo = '';
  let elsewhere = '';
  before(async () => {
    repo = await tempDir('hloserve-repo-');
    elsewhere = await tempDir('hloserve-elsewhere-');
    await writeMlpBundle(repo, 'good');
    await writeMlpBundle(repo, 'broken', { 'model.b4.mlir': null });
    await writeMlpBundle(repo, '.hidden');
    await mkdir(join(repo, 'not-a-bundle'));
    await writeFile(join(repo, 'README.md'), 'models\n');
    await symlink(await writeMlpBundle(elsewhere, 'linked-target'), join(repo, 'linked'));
  });
  after(async () => {
    await removeDir(repo);
    await removeDir(elsewhere);
  });

  test('one bad bundle does not stop the others', async () => {
    const found = await discoverBundles(repo);
    assert.deepEqual(
      found.map((f) => [f.name, f.ok]),
      [
        ['broken', false],
        ['good', true],
        ['linked', true],
      ],
    );
    const broken = found[0]!;
    assert.ok(!broken.ok);
    assert.ok(broken.error instanceof ServeError);
    assert.equal(broken.error.code, 'HLO_ERR_BUNDLE_INVALID');
    assert.match(
      broken.error.message,
      /broken\/manifest\.yaml: batching\.compiled_batch_sizes\[1\]: 4 has no module file/,
    );
    const good = found[1]!;
    assert.ok(good.ok && good.bundle.name === 'good' && good.dir === join(repo, 'good'));
    const linked = found[2]!;
    assert.ok(linked.ok && linked.bundle.name === 'linked');
  });

  test('include filter (models_include)', async () => {
    const found = await discoverBundles(repo, { include: ['good', 'missing'] });
    assert.deepEqual(
      found.map((f) => f.name),
      ['good'],
    );
    assert.equal((await discoverBundles(repo, { include: [] })).length, 3);
  });

  test('an unreadable repository is a config error', async () => {
    await assert.rejects(discoverBundles(join(repo, 'nope')), (err: unknown) => {
      assert.ok(err instanceof ServeError && err.code === 'HLO_ERR_CONFIG_INVALID');
      assert.match(err.message, /model_repo .*nope: cannot read/);
      return true;
    });
  });
});

suite('repositoryHasHooks', () => {
  test('true when a bundle of the startup set has a hooks file; models_include and dot-directories apply', async () => {
    const repo = await tempDir('hloserve-hooked-');
    try {
      await writeMlpBundle(repo, 'plain');
      await writeMlpBundle(repo, '.scratch');
      await writeFile(join(repo, '.scratch', 'model.js'), 'export function preprocess(t) { return t; }\n');
      assert.equal(repositoryHasHooks(repo), false, 'a dot-directory is no bundle');
      await writeMlpBundle(repo, 'hooked');
      await writeFile(join(repo, 'hooked', 'model.mjs'), 'export function preprocess(t) { return t; }\n');
      assert.equal(repositoryHasHooks(repo), true);
      assert.equal(repositoryHasHooks(repo, ['plain']), false, 'models_include leaves the hooked bundle out');
      assert.equal(repositoryHasHooks(repo, ['hooked']), true);
      assert.equal(repositoryHasHooks(join(repo, 'missing')), false, 'an unreadable repository: no hooks');
    } finally {
      await removeDir(repo);
    }
  });
});
