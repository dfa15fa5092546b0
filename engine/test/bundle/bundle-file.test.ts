import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, suite, test } from 'node:test';
import { ServeError } from '@hloserve/common/errors';
import { loadBundle } from '../../src/bundle/bundle.js';
import { readBundleFile } from '../../src/bundle/bundle-file.js';
import { readManifest } from '../../src/bundle/manifest.js';
import { readSafetensors, readSafetensorsHeader } from '../../src/bundle/safetensors.js';
import { prepareHookSource } from '../../src/hooks/hook-source.js';
import { removeDir, tempDir, writeMlpBundle } from './fixtures.js';

const mkfifo = (path: string): void => {
  execFileSync('mkfifo', [path]);
};

/** A bundle error naming `path` and what it is, not a hang. */
const refused = (path: string, what: RegExp) => (err: unknown) => {
  assert.ok(err instanceof ServeError, String(err));
  assert.equal(err.code, 'HLO_ERR_BUNDLE_INVALID');
  assert.ok(err.message.startsWith(`${path}: is `), err.message);
  assert.match(err.message, what);
  return true;
};

suite(
  'bundle files that are not regular files are refused without blocking',
  { skip: process.platform !== 'linux' },
  () => {
    let root = '';
    before(async () => {
      root = await tempDir();
    });
    after(async () => removeDir(root));

    test('a module, the weights, the manifest and a hooks file as FIFOs, a device or a directory', async () => {
      const dir = await writeMlpBundle(root, 'fifo-module');
      const module = join(dir, 'model.b4.mlir');
      await rm(module);
      mkfifo(module);
      await assert.rejects(loadBundle(dir), refused(module, /a FIFO, not a regular file/));

      const weights = join(await writeMlpBundle(root, 'zero-weights'), 'weights.safetensors');
      await rm(weights);
      await symlink('/dev/zero', weights);
      await assert.rejects(readSafetensorsHeader(weights), refused(weights, /a character device/));
      await assert.rejects(readSafetensors(weights), refused(weights, /a character device/));

      const manifest = join(root, 'fifo-manifest.yaml');
      mkfifo(manifest);
      await assert.rejects(readManifest(manifest), refused(manifest, /a FIFO/));

      const hooks = join(root, 'model.mjs');
      mkfifo(hooks);
      await assert.rejects(
        prepareHookSource({ path: hooks, language: 'js' }, join(root, 'cache')),
        refused(hooks, /a FIFO/),
      );

      const folder = join(root, 'a-folder.mlir');
      await mkdir(folder);
      await assert.rejects(readBundleFile(folder), refused(folder, /a directory/));
    });

    test('many FIFO bundles at once leave the file system usable (they once held every libuv thread)', async () => {
      const dirs = await Promise.all(
        Array.from({ length: 8 }, async (_, i) => {
          const dir = await writeMlpBundle(root, `many${i}`);
          for (const f of ['model.b1.mlir', 'model.b4.mlir', 'weights.safetensors']) {
            await rm(join(dir, f));
            mkfifo(join(dir, f));
          }
          return dir;
        }),
      );
      const results = await Promise.allSettled(dirs.map((d) => loadBundle(d)));
      assert.ok(results.every((r) => r.status === 'rejected'));
      // Had any open() blocked, this read would wait behind it for good.
      const probe = join(root, 'probe.txt');
      await writeFile(probe, 'ok');
      assert.equal(await readFile(probe, 'utf8'), 'ok');
      const good = await loadBundle(await writeMlpBundle(root, 'good-after'));
      assert.equal(good.name, 'good-after');
    });

    test('a bundle with hooks is refused for a FIFO or device anywhere under it, which its module could import', async () => {
      const hooked = async (name: string): Promise<string> => {
        const dir = await writeMlpBundle(root, name);
        await writeFile(join(dir, 'model.mjs'), "import './lib/helper.mjs';\nexport const postprocess = (t) => t;\n");
        await mkdir(join(dir, 'lib'));
        return dir;
      };
      const a = await hooked('hooked-fifo');
      mkfifo(join(a, 'lib', 'helper.mjs'));
      await assert.rejects(loadBundle(a), refused(join(a, 'lib', 'helper.mjs'), /a FIFO/));

      const b = await hooked('hooked-device');
      await symlink('/dev/null', join(b, 'lib', 'helper.mjs'));
      await assert.rejects(loadBundle(b), refused(join(b, 'lib', 'helper.mjs'), /a character device/));

      // A linked directory is not entered (here a loop), and a bundle without hooks is not walked.
      const c = await hooked('hooked-loop');
      await writeFile(join(c, 'lib', 'helper.mjs'), 'export {};\n');
      await symlink('..', join(c, 'lib', 'up'));
      assert.equal((await loadBundle(c)).hooks?.path, join(c, 'model.mjs'));
      const d = await writeMlpBundle(root, 'plain-with-fifo');
      mkfifo(join(d, 'notes.txt'));
      assert.equal((await loadBundle(d)).name, 'plain-with-fifo');
    });

    test('a regular file behind a symlink still reads', async () => {
      const dir = await writeMlpBundle(root, 'linked');
      const target = join(root, 'shared-weights.safetensors');
      await writeFile(target, await readFile(join(dir, 'weights.safetensors')));
      await rm(join(dir, 'weights.safetensors'));
      await symlink(target, join(dir, 'weights.safetensors'));
      const b = await loadBundle(dir);
      assert.equal(b.weights?.path, join(dir, 'weights.safetensors'));
    });
  },
);
