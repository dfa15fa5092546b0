import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { suite, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { hostArray, Runtime } from '../lib/index.js';
import { DOT, heavyProgram, randomF32 } from './programs.js';

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

  test('the thresholds are switched by a thread at normal priority, not by a build thread', (t) => {
    if (Runtime.mallocMmapThreshold === 0) return t.skip("the threshold is the operator's");
    // mallopt holds the main arena's lock, which the JS thread needs: held by a SCHED_IDLE build
    // thread it kept the JS thread waiting for milliseconds (bench/RESULTS.md, session 17).
    const policies = readdirSync('/proc/self/task').flatMap((tid) => {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      // Field 41 of stat: the scheduling policy (0 SCHED_OTHER, 5 SCHED_IDLE).
      return name === 'hlo-malloc' ? [Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[38])] : [];
    });
    assert.deepEqual(policies, [0]);
  });

  /** Runtime.mallocMmapThresholdNow() on every event-loop turn until `work` settles. */
  async function thresholdsDuring(work: Promise<unknown>): Promise<number[]> {
    const seen: number[] = [];
    let done = false;
    const settled = work.finally(() => {
      done = true;
    });
    while (!done) {
      seen.push(Runtime.mallocMmapThresholdNow());
      await new Promise((r) => setImmediate(r));
    }
    await settled;
    return seen;
  }

  test('a compile lowers the threshold while it runs; a background execution (a warmup) does not', async (t) => {
    if (Runtime.mallocMmapThreshold === 0) return t.skip("the threshold is the operator's");
    const rt = await Runtime.create();
    try {
      const serving = Runtime.mallocMmapThreshold;
      const during = await thresholdsDuring(rt.compile(heavyProgram(12, 5, 'cosine')));
      assert.ok(during.includes(2 ** 20), "the compile ran at the builds' threshold");
      // Long enough that the loop looks many times while it runs (about 2 GFLOP).
      const n = 1024;
      const exe = await rt.compile(DOT(n, n, n));
      // The build thread delivers the compile's result before its scope ends (task_pool.cc), and
      // the serving values return 20 ms after the last build ends (malloc_tuning.cc): wait for them.
      const until = performance.now() + 10_000;
      while (Runtime.mallocMmapThresholdNow() !== serving && performance.now() < until)
        await new Promise((r) => setTimeout(r, 1));
      assert.equal(Runtime.mallocMmapThresholdNow(), serving, 'the serving threshold came back after the compile');
      const args = [hostArray('f32', [n, n], randomF32(n * n, 1)), hostArray('f32', [n, n], randomF32(n * n, 2))];
      const seen = await thresholdsDuring(exe.run(args, { background: true }));
      exe.dispose();
      assert.ok(seen.length >= 3, `looked ${seen.length} times`);
      // Lowered, every serving execution's multi-MiB scratch would be mapped and zeroed afresh for
      // as long as a warmup starves at SCHED_IDLE (session 13: the CNN at one caller, 1.3x the CPU).
      assert.deepEqual([...new Set(seen)], [serving]);
    } finally {
      rt.dispose();
    }
  });
});
