import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { after, before, suite, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { asFloat32, hostArray, Runtime } from '../lib/index.js';
import { DOT, heavyProgram, randomF32 } from './programs.js';

const linux = process.platform === 'linux';
const SCHED_IDLE = 5;

/** Each thread of this process: CPU ticks used, scheduling policy and nice value (/proc). */
function threads(): Map<string, { ticks: number; policy: number; nice: number }> {
  const out = new Map<string, { ticks: number; policy: number; nice: number }>();
  for (const tid of readdirSync('/proc/self/task')) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // the thread ended between the listing and the read
    }
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    out.set(tid, { ticks: Number(f[11]) + Number(f[12]), policy: Number(f[38]), nice: Number(f[16]) });
  }
  return out;
}

suite('background priority: compiles never compete with serving threads', () => {
  let rt: Runtime;
  before(async () => {
    rt = await Runtime.create();
  });
  after(() => rt.dispose());

  test(
    'the background threads are lowered (SCHED_IDLE where the system allows, else nice 19)',
    { skip: !linux },
    () => {
      assert.ok(['idle', 'nice'].includes(Runtime.backgroundPriority), Runtime.backgroundPriority);
    },
  );

  test('a compile spends its CPU time on lowered threads, XLA helper threads included', { skip: !linux }, async () => {
    const lowered = (x: { policy: number; nice: number }) => x.policy === SCHED_IDLE || x.nice === 19;
    const before = threads();
    const exe = await rt.compile(heavyProgram(20));
    const after = threads();
    exe.dispose();
    let low = 0;
    let total = 0;
    for (const [tid, t] of after) {
      const used = t.ticks - (before.get(tid)?.ticks ?? 0);
      total += used;
      if (lowered(t)) low += used;
    }
    // The JS thread and the serving pool only wait; a compile on them would show here.
    assert.ok(total >= 5, `the compile used only ${total} ticks; too little to judge`);
    assert.ok(low / total >= 0.7, `${low} of ${total} ticks on lowered threads`);
  });

  test('an execution on the background lane returns what a serving one does', async () => {
    const exe = await rt.compile(DOT(4, 8, 4));
    const args = [hostArray('f32', [4, 8], randomF32(32, 1)), hostArray('f32', [8, 4], randomF32(32, 2))];
    const [serving] = await exe.run(args);
    const [background] = await exe.run(args, { background: true });
    assert.deepEqual(asFloat32(background!), asFloat32(serving!));
    exe.dispose();
  });

  test('HLOSERVE_BACKGROUND_PRIORITY=normal leaves the background threads as they are', () => {
    const index = fileURLToPath(new URL('../lib/index.js', import.meta.url));
    const r = spawnSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `const { Runtime } = await import(${JSON.stringify(index)}); console.log(Runtime.backgroundPriority)`,
      ],
      { env: { ...process.env, HLOSERVE_BACKGROUND_PRIORITY: 'normal' }, encoding: 'utf8' },
    );
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout.trim(), 'normal');
  });
});
