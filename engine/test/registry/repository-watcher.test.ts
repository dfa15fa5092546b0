import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, renameSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, suite, test } from 'node:test';
import { createLogger } from '../../src/log.js';
import { bundleSignature } from '../../src/registry/bundle-signature.js';
import { RepositoryWatcher } from '../../src/registry/repository-watcher.js';

interface Loaded {
  name: string;
  signature: string;
  directoryId: string;
}

/** A watcher over `repo` whose actions are recorded, with a loaded set kept like the worker's. */
function harness(repo: string, initial: Loaded[] = []) {
  const actions: string[] = [];
  const loaded = new Map(initial.map((l) => [l.name, l]));
  const record = async (name: string): Promise<void> => {
    const sig = await bundleSignature(join(repo, name));
    if (sig) loaded.set(name, { name, signature: sig.files, directoryId: sig.directoryId });
  };
  const watcher = new RepositoryWatcher({
    repo,
    pollSeconds: 3600,
    include: [],
    log: createLogger('silent'),
    settleMs: 3_600_000,
    actions: {
      load: async (name) => {
        actions.push(`load ${name}`);
        await record(name);
      },
      unload: async (name) => {
        actions.push(`unload ${name}`);
        loaded.delete(name);
      },
      rename: async (from, to) => {
        actions.push(`rename ${from} ${to}`);
        const l = loaded.get(from)!;
        loaded.delete(from);
        loaded.set(to, { ...l, name: to });
      },
      loaded: () => [...loaded.values()],
    },
  });
  const scan = async () => {
    await watcher.scan();
    await watcher.idle();
  };
  return { actions, scan, watcher };
}

function bundle(repo: string, name: string, text = 'v1'): void {
  mkdirSync(join(repo, name), { recursive: true });
  writeFileSync(join(repo, name, 'manifest.yaml'), `# ${text}\n`);
  writeFileSync(join(repo, name, 'weights.safetensors'), text);
}

suite('RepositoryWatcher (dynamic mode)', () => {
  const repo = mkdtempSync(join(tmpdir(), 'hlo-watch-'));
  after(() => rmSync(repo, { recursive: true, force: true }));

  test('acts only on a signature seen twice; add, change (any file), delete, rename', async () => {
    const { actions, scan, watcher } = harness(repo);
    await scan(); // the first look only records
    bundle(repo, 'a');
    await scan();
    assert.deepEqual(actions, [], 'seen once: not yet');
    await scan();
    assert.deepEqual(actions, ['load a']);
    // A file no fixed list would name changes: that is a change too.
    writeFileSync(join(repo, 'a', 'vocab.txt'), 'words');
    await scan();
    writeFileSync(join(repo, 'a', 'vocab.txt'), 'more words');
    utimesSync(join(repo, 'a', 'vocab.txt'), new Date(), new Date(Date.now() + 5000));
    await scan();
    assert.deepEqual(actions, ['load a'], 'still moving: no reload yet');
    await scan();
    assert.deepEqual(actions, ['load a', 'load a']);
    renameSync(join(repo, 'a'), join(repo, 'b'));
    await scan();
    await scan();
    assert.deepEqual(actions, ['load a', 'load a', 'rename a b']);
    rmSync(join(repo, 'b'), { recursive: true });
    await scan();
    await scan();
    assert.deepEqual(actions, ['load a', 'load a', 'rename a b', 'unload b']);
    await scan();
    assert.equal(actions.length, 4, 'nothing more once settled');
    await watcher.close();
  });

  test('a rename seen across two looks (old name gone one look before the new one settles) is still a rename', async (t) => {
    const root = mkdtempSync(join(tmpdir(), 'hlo-watch-root-'));
    t.after(() => rmSync(root, { recursive: true, force: true }));
    const repo2 = join(root, 'repo');
    mkdirSync(repo2);
    bundle(repo2, 'e');
    const sig = (await bundleSignature(join(repo2, 'e')))!;
    const { actions, scan, watcher } = harness(repo2, [
      { name: 'e', signature: sig.files, directoryId: sig.directoryId },
    ]);
    await scan();
    renameSync(join(repo2, 'e'), join(root, 'moving'));
    await scan();
    renameSync(join(root, 'moving'), join(repo2, 'f'));
    await scan();
    assert.deepEqual(actions, [], 'nothing while f is still arriving');
    await scan();
    assert.deepEqual(actions, ['rename e f']);
    await watcher.close();
  });

  test('a directory recreated under a new name with other content is an unload and a load, not a rename', async () => {
    bundle(repo, 'c', 'one');
    const sig = (await bundleSignature(join(repo, 'c')))!;
    const { actions, scan, watcher } = harness(repo, [
      { name: 'c', signature: sig.files, directoryId: sig.directoryId },
    ]);
    await scan();
    renameSync(join(repo, 'c'), join(repo, 'd'));
    writeFileSync(join(repo, 'd', 'weights.safetensors'), 'two!');
    await scan();
    await scan();
    assert.deepEqual(actions.sort(), ['load d', 'unload c']);
    await watcher.close();
  });
});
