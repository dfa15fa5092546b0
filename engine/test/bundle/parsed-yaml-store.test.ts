import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, suite, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { discoverBundles } from '../../src/bundle/discover.js';
import { parseManifest } from '../../src/bundle/manifest.js';
import { ParsedYamlStore } from '../../src/bundle/parsed-yaml-store.js';
import { MLP_MANIFEST } from './fixtures.js';

const examplesDir = fileURLToPath(new URL('../../../../examples/models/', import.meta.url));

suite('ParsedYamlStore: manifests parsed once, kept by their text', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'hlo-parsed-yaml-'));
  after(() => rm(dir, { recursive: true, force: true }));
  const text = MLP_MANIFEST;

  test('a second start reads the kept parse, not the YAML, and gets the same manifest', async () => {
    const file = join(dir, 'a.json');
    const first = await ParsedYamlStore.open(file);
    assert.equal(first.lookup(text), undefined, 'an empty store');
    const parsed = parseManifest(text, 'manifest.yaml', first);
    await first.save();
    const second = await ParsedYamlStore.open(file);
    const kept = second.lookup(text);
    assert.ok(kept !== undefined);
    // (A manifest's wireShape functions are closures of each parse; the data is compared.)
    const plain = (v: unknown): unknown => JSON.parse(JSON.stringify(v));
    assert.deepEqual(plain(parseManifest(text, 'manifest.yaml', second)), plain(parsed));
    // Changed text misses: the key is the text, so an edited manifest is parsed again.
    assert.equal(second.lookup(text.replace('name: mlp', 'name: mlq')), undefined);
  });

  test('EXPECTED FAILURE - a damaged entry or file is found and the text parsed again', async () => {
    const file = join(dir, 'b.json');
    const s = await ParsedYamlStore.open(file);
    s.remember(text, { a: 1 });
    await s.save();
    const doc = JSON.parse(await readFile(file, 'utf8')) as { entries: Record<string, { json: string }> };
    const key = Object.keys(doc.entries)[0]!;
    doc.entries[key]!.json = '{"a":2}';
    await writeFile(file, JSON.stringify(doc));
    const damaged = await ParsedYamlStore.open(file);
    assert.equal(damaged.lookup(text), undefined, 'its checksum no longer matches');
    await writeFile(file, '{"format":1,"entries":{"x":');
    const truncated = await ParsedYamlStore.open(file);
    assert.equal(truncated.lookup(text), undefined);
    // The manifest still parses, from its text, and the next save replaces the damaged file.
    assert.equal(parseManifest(text, 'manifest.yaml', truncated).name, 'mlp');
    await truncated.save();
    assert.ok((await ParsedYamlStore.open(file)).lookup(text) !== undefined);
  });

  test('a value JSON cannot hold exactly is not kept', async () => {
    const file = join(dir, 'c.json');
    const s = await ParsedYamlStore.open(file);
    s.remember('x: .inf', { x: Infinity });
    s.remember('y: -0.0', { y: -0 });
    await s.save();
    const again = await ParsedYamlStore.open(file);
    assert.equal(again.lookup('x: .inf'), undefined);
    assert.equal(again.lookup('y: -0.0'), undefined);
  });

  test('discovery keeps the example repository parsed; the next discovery reads every manifest from the store', async () => {
    const file = join(dir, 'd.json');
    const first = await ParsedYamlStore.open(file);
    const a = await discoverBundles(examplesDir, { parsedYaml: Promise.resolve(first) });
    await first.save();
    const second = await ParsedYamlStore.open(file);
    const texts = await Promise.all(a.map((d) => readFile(join(d.dir, 'manifest.yaml'), 'utf8')));
    for (const t of texts) assert.ok(second.lookup(t) !== undefined);
    const b = await discoverBundles(examplesDir, { parsedYaml: Promise.resolve(await ParsedYamlStore.open(file)) });
    assert.deepEqual(
      b.map((d) => (d.ok ? d.bundle.manifest : d.error.message)),
      a.map((d) => (d.ok ? d.bundle.manifest : d.error.message)),
    );
  });
});
