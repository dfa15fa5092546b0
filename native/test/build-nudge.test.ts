import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { after, before, suite, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { hostArray, Runtime } from '../lib/index.js';
import { DOT, heavyProgram, randomF32 } from './programs.js';

const linux = process.platform === 'linux';
// This file's runtime confines both ways (opt-in), so the tests below see the serving threads held
// off the build's CPU; the addon reads it when it loads, at the first Runtime call.
process.env.HLOSERVE_BUILD_CONFINE_SERVING = '1';

/** This process's nudge threads: scheduling policy and the CPUs each may run on (/proc). */
function nudgeThreads(): { policy: number; cpus: string }[] {
  const out: { policy: number; cpus: string }[] = [];
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      if (readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim() !== 'hlo-nudge') continue;
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const status = readFileSync(`/proc/self/task/${tid}/status`, 'utf8');
      out.push({
        policy: Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[38]),
        cpus: /Cpus_allowed_list:\s*(\S+)/.exec(status)?.[1] ?? '',
      });
    } catch {
      continue; // the thread ended between the listing and the read
    }
  }
  return out;
}

/**
 * The CPUs each thread of this process at `policy` may run on: 5, SCHED_IDLE (the build pool, XLA's
 * compile helpers); 0, SCHED_OTHER (the serving threads).
 */
function threadCpus(policy: 0 | 5): string[] {
  const out: string[] = [];
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2).split(' ')[38] !== String(policy)) continue;
      const status = readFileSync(`/proc/self/task/${tid}/status`, 'utf8');
      out.push(/Cpus_allowed_list:\s*(\S+)/.exec(status)?.[1] ?? '');
    } catch {
      continue;
    }
  }
  return out;
}
const idleThreadCpus = () => threadCpus(5);

/** Expands a Cpus_allowed_list ("0-3,6") into CPU numbers. */
function cpuList(list: string): number[] {
  return list.split(',').flatMap((part) => {
    const [a = 0, b = a] = part.split('-').map(Number);
    return Array.from({ length: b - a + 1 }, (_, i) => a + i);
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Nudges per ms of one compile without and with a serving loop beside it, in a fresh process with
 * `env` (the nudger is per process and reads its settings at load).
 */
function nudgeRates(env: Record<string, string>): { quiet: number; busy: number } {
  const index = fileURLToPath(new URL('../lib/index.js', import.meta.url));
  const programs = fileURLToPath(new URL('./programs.js', import.meta.url));
  const script = `const { hostArray, Runtime } = await import(${JSON.stringify(index)});
    const { DOT, heavyProgram, randomF32 } = await import(${JSON.stringify(programs)});
    const rt = await Runtime.create();
    const dot = await rt.compile(DOT(4, 8, 4));
    const args = [hostArray('f32', [4, 8], randomF32(32, 1)), hostArray('f32', [8, 4], randomF32(32, 2))];
    const rate = async (serving) => {
      let stop = false;
      const loop = async () => { while (!stop) await dot.run(args); };
      const n0 = Runtime.buildNudges();
      const t0 = performance.now();
      const caller = serving ? loop() : Promise.resolve();
      const exe = await rt.compile(heavyProgram(12, 5, 'cosine'));
      const r = (Runtime.buildNudges() - n0) / (performance.now() - t0);
      stop = true;
      await caller;
      exe.dispose();
      return r;
    };
    const quiet = await rate(false);
    const busy = await rate(true);
    dot.dispose();
    rt.dispose();
    console.log(JSON.stringify({ quiet, busy }));`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
  });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout.trim().split('\n').pop() ?? '') as { quiet: number; busy: number };
}

/** Runtime.buildNudgeMicros and the nudge threads' count in a fresh process with `env`. */
function probe(env: Record<string, string>): { micros: number; threads: number; confinesServing: boolean } {
  const index = fileURLToPath(new URL('../lib/index.js', import.meta.url));
  const script = `const { Runtime } = await import(${JSON.stringify(index)});
    const { readdirSync, readFileSync } = await import('node:fs');
    const n = readdirSync('/proc/self/task').filter((t) => { try { return readFileSync('/proc/self/task/' + t + '/comm', 'utf8').trim() === 'hlo-nudge'; } catch { return false; } }).length;
    console.log(JSON.stringify({ micros: Runtime.buildNudgeMicros, threads: n, confinesServing: Runtime.buildConfinesServing }));`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
  });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout.trim()) as { micros: number; threads: number; confinesServing: boolean };
}

suite('build nudger: serving threads woken behind a lowered compile thread run within the nudge period', () => {
  let rt: Runtime;
  before(async () => {
    rt = await Runtime.create();
  });
  after(() => rt.dispose());

  test('one nudge thread per CPU, at SCHED_BATCH, pinned to its CPU', { skip: !linux }, () => {
    if (Runtime.backgroundPriority === 'normal') return; // nothing runs lowered: no nudger
    // 100 µs where builds are confined (two CPUs or more), 500 µs where the nudged CPU serves too.
    assert.equal(Runtime.buildNudgeMicros, Runtime.buildServingCpu >= 0 ? 100 : 500);
    const ts = nudgeThreads();
    assert.equal(ts.length, availableParallelism());
    // SCHED_BATCH (3): it preempts SCHED_IDLE compile threads and never a serving thread. One
    // started from a SCHED_IDLE thread would inherit SCHED_IDLE and preempt nothing.
    for (const t of ts) assert.equal(t.policy, 3);
    assert.deepEqual(ts.map((t) => t.cpus).sort(), [...new Set(ts.map((t) => t.cpus))].sort());
    for (const t of ts) assert.match(t.cpus, /^\d+$/);
  });

  test('nudges run while a compile runs and stop when it ends', { skip: !linux }, async () => {
    if (Runtime.backgroundPriority === 'normal') return;
    await sleep(20);
    const idle0 = Runtime.buildNudges();
    await sleep(100);
    assert.equal(Runtime.buildNudges(), idle0, 'nudges while no build runs');
    const exe = await rt.compile(heavyProgram(16, 5, 'cosine'));
    const during = Runtime.buildNudges() - idle0;
    exe.dispose();
    // With no serving work each CPU is checked on every 5 ms: a compile of a few hundred ms gives
    // tens to hundreds; 10 is far below any machine's.
    assert.ok(during >= 10, `${during} nudges during the compile`);
    await sleep(20);
    const after0 = Runtime.buildNudges();
    await sleep(100);
    assert.equal(Runtime.buildNudges(), after0, 'nudges went on after the compile');
  });

  test('nudges at full rate only while serving executions overlap the build', { skip: !linux }, () => {
    if (Runtime.backgroundPriority === 'normal') return;
    // With serving confined too (as in this file) nothing is nudged once the two sides are apart,
    // so the rates are measured where only the builds are confined (the default).
    const off = nudgeRates({ HLOSERVE_BUILD_CONFINE_SERVING: '0' });
    // Nominally 0.1 ms against 5 ms per nudged CPU: 50x. 2x leaves room for a loaded machine.
    assert.ok(off.busy >= 2 * off.quiet, `nudges per ms: ${off.busy.toFixed(2)} serving, ${off.quiet.toFixed(2)} not`);
  });

  test(
    'a build overlapping serving work is held off the serving CPU, serving off the build CPU, both released after',
    { skip: !linux },
    async () => {
      if (Runtime.buildServingCpu < 0) return; // one CPU, or builds not at SCHED_IDLE: no confinement
      const cpu = Runtime.buildServingCpu;
      await sleep(50); // an earlier test's confinement lifts within 5 ms of its build
      const all = cpuList(idleThreadCpus()[0] ?? '');
      assert.ok(all.includes(cpu), `the serving CPU ${cpu} is one of the process's (${all.join(',')})`);
      // A compile with nothing serving keeps every CPU (a start compiles on all of them).
      const c0 = Runtime.buildConfinements();
      (await rt.compile(heavyProgram(12, 5, 'cosine'))).dispose();
      assert.equal(Runtime.buildConfinements(), c0, 'confined with no serving work');

      const dot = await rt.compile(DOT(4, 8, 4));
      const args = [hostArray('f32', [4, 8], randomF32(32, 1)), hostArray('f32', [8, 4], randomF32(32, 2))];
      let stop = false;
      const loop = async () => {
        while (!stop) await dot.run(args);
      };
      const caller = loop();
      const seen: { idle: string[]; serving: string[] }[] = [];
      const sampler = setInterval(() => seen.push({ idle: idleThreadCpus(), serving: threadCpus(0) }), 2);
      const exe = await rt.compile(heavyProgram(16, 5, 'cosine'));
      clearInterval(sampler);
      stop = true;
      await caller;
      exe.dispose();
      dot.dispose();
      assert.ok(Runtime.buildConfinements() > c0, 'not confined while serving work overlapped the build');
      // Some sample in the compile saw every SCHED_IDLE thread off the serving CPU and, where
      // serving is confined too, every normal thread (this JS thread among them) off the build's.
      const apart = (s: { idle: string[]; serving: string[] }): boolean => {
        if (s.idle.length === 0 || s.idle.some((list) => cpuList(list).includes(cpu))) return false;
        if (!Runtime.buildConfinesServing) return true;
        const build = new Set(s.idle.flatMap(cpuList));
        return s.serving.every((list) => cpuList(list).every((c) => !build.has(c)));
      };
      assert.ok(seen.some(apart), `no sample had the build and serving apart: ${JSON.stringify(seen.slice(-3))}`);
      // Lifted once the build ends (the serving CPU's nudge thread checks every 5 ms at most): every
      // thread is back on the CPUs it had.
      await sleep(50);
      for (const list of idleThreadCpus()) assert.deepEqual(cpuList(list), all, 'still confined after the build');
      for (const list of threadCpus(0)) assert.deepEqual(cpuList(list), all, 'serving threads still confined after');
    },
  );

  test('HLOSERVE_BUILD_NUDGE_US=0 turns it off; a period is taken as given', { skip: !linux }, () => {
    assert.deepEqual(probe({ HLOSERVE_BUILD_NUDGE_US: '0' }), { micros: 0, threads: 0, confinesServing: false });
    assert.equal(probe({ HLOSERVE_BUILD_NUDGE_US: '1000', HLOSERVE_BACKGROUND_PRIORITY: 'idle' }).micros, 1000);
  });

  test('no nudger where the background threads run at normal priority', { skip: !linux }, () => {
    assert.deepEqual(probe({ HLOSERVE_BACKGROUND_PRIORITY: 'normal' }), {
      micros: 0,
      threads: 0,
      confinesServing: false,
    });
  });

  test(
    'HLOSERVE_BUILD_CONFINE_SERVING=1 holds the serving threads off the build CPU; off by default',
    { skip: !linux },
    () => {
      const env = { HLOSERVE_BACKGROUND_PRIORITY: 'idle', HLOSERVE_BUILD_CONFINE_SERVING: '' };
      const off = probe(env);
      if (off.threads < 2) return; // one CPU: no confinement either way
      assert.equal(off.confinesServing, false);
      assert.equal(probe({ ...env, HLOSERVE_BUILD_CONFINE_SERVING: '1' }).confinesServing, true);
      assert.equal(
        probe({ ...env, HLOSERVE_BUILD_CONFINE_SERVING: '1', HLOSERVE_BUILD_CONFINE: '0' }).confinesServing,
        false,
      );
    },
  );
});
