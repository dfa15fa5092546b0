import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { prepareHookSource } from '../../src/hooks/hook-source.js';

test('a TypeScript hook is transpiled off the serving thread, once per content, across starts', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'hloserve-hook-source-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const cache = join(dir, 'cache');
  const path = join(dir, 'model.ts');
  writeFileSync(path, 'export function preprocess(t: unknown): unknown { return t; }\n');
  const first = await prepareHookSource({ path, language: 'ts' }, cache);
  // The compiler was never loaded here: importing it held this thread for 0.4-0.9 s.
  const loaded = Object.keys(createRequire(import.meta.url).cache);
  assert.equal(
    loaded.some((k) => k.includes(join('node_modules', 'typescript'))),
    false,
  );
  const out = fileURLToPath(first.url);
  const written = statSync(out, { bigint: true }).mtimeNs;
  // Another start (or a rename, or a reload with the same content) finds the output in the cache.
  const again = await prepareHookSource({ path, language: 'ts' }, cache);
  assert.equal(again.url, first.url);
  assert.equal(statSync(out, { bigint: true }).mtimeNs, written, 'not transpiled or written again');
});
