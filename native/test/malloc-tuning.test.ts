import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { suite, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Runtime } from '../lib/index.js';

// glibc only: musl and other libcs have no mmap threshold to fix.
const glibc =
  process.platform === 'linux' &&
  Boolean((process.report?.getReport() as { header?: { glibcVersionRuntime?: string } }).header?.glibcVersionRuntime);
const lib = fileURLToPath(new URL('../lib/index.js', import.meta.url));

function thresholdIn(env: NodeJS.ProcessEnv): number {
  const r = spawnSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `import { Runtime } from ${JSON.stringify(lib)}; console.log(Runtime.mallocMmapThreshold);`,
    ],
    { env, encoding: 'utf8' },
  );
  assert.equal(r.status, 0, r.stderr);
  return Number(r.stdout.trim());
}

suite('malloc tuning: reloads do not leave freed blocks in the heap', { skip: !glibc && 'not glibc' }, () => {
  test('loading the addon fixes the mmap threshold at 32 MiB', () => {
    const env = { ...process.env };
    delete env['MALLOC_MMAP_THRESHOLD_'];
    delete env['GLIBC_TUNABLES'];
    assert.equal(thresholdIn(env), 32 * 2 ** 20);
  });

  test("an operator's MALLOC_MMAP_THRESHOLD_ or GLIBC_TUNABLES is left in force", () => {
    assert.equal(thresholdIn({ ...process.env, MALLOC_MMAP_THRESHOLD_: '65536' }), 0);
    assert.equal(thresholdIn({ ...process.env, GLIBC_TUNABLES: 'glibc.malloc.mmap_threshold=65536' }), 0);
  });

  test('this process reports what it applied', () => {
    const own =
      process.env['MALLOC_MMAP_THRESHOLD_'] === undefined && !process.env['GLIBC_TUNABLES']?.includes('mmap_threshold');
    assert.equal(Runtime.mallocMmapThreshold, own ? 32 * 2 ** 20 : 0);
  });
});
