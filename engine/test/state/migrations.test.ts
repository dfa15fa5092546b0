import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { suite, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const engineDir = resolve(fileURLToPath(import.meta.url), '..', '..', '..', '..');

suite('committed migrations', () => {
  for (const dialect of ['sqlite', 'pg']) {
    test(`${dialect}: drizzle-kit finds nothing to generate (the schema and the committed SQL agree)`, () => {
      const r = spawnSync('npx', ['drizzle-kit', 'generate', '--config', `drizzle.${dialect}.config.ts`], {
        cwd: engineDir,
        encoding: 'utf8',
        timeout: 120_000,
      });
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout, /No schema changes/, `schema-${dialect} changed without a migration:\n${r.stdout}`);
    });
  }
});
