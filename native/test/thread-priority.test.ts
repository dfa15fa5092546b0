import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { Worker } from 'node:worker_threads';
import { Runtime } from '../lib/index.js';

const SCHED_IDLE = 5;

/** A thread's scheduling policy and nice value (/proc/self/task/TID/stat). */
function priority(tid: number): { policy: number; nice: number } {
  const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { policy: Number(f[38]), nice: Number(f[16]) };
}

test('idleThisThread puts the calling worker thread, and no other thread, at SCHED_IDLE', async (t) => {
  if (process.platform !== 'linux') return t.skip('per-thread scheduling is a Linux property');
  const main = priority(process.pid);
  const module = new URL('../lib/thread-priority.js', import.meta.url).href;
  const w = new Worker(
    `const { parentPort } = require('node:worker_threads');
     const { readlinkSync } = require('node:fs');
     import(${JSON.stringify(module)}).then((m) => {
       const ok = m.idleThisThread();
       parentPort.postMessage({ ok, tid: Number(readlinkSync('/proc/thread-self').split('/').pop()) });
       parentPort.once('message', () => process.exit(0));
     });`,
    { eval: true },
  );
  const { ok, tid } = await new Promise<{ ok: boolean; tid: number }>((resolve, reject) => {
    w.once('message', resolve);
    w.once('error', reject);
  });
  try {
    if (!ok) {
      // Only where the system refuses SCHED_IDLE (the PJRT addon's background threads fell back too).
      assert.notEqual(Runtime.backgroundPriority, 'idle', 'SCHED_IDLE is allowed, so hloserve_thread is not built');
      assert.deepEqual(priority(tid), main);
      return;
    }
    assert.deepEqual(priority(tid), { policy: SCHED_IDLE, nice: main.nice });
    assert.deepEqual(priority(process.pid), main);
  } finally {
    w.postMessage('done');
    await new Promise((r) => w.once('exit', r));
  }
});

test("setThreadTimerSlack sets the calling worker thread's timer slack, and no other thread's", async (t) => {
  if (process.platform !== 'linux') return t.skip('per-thread timer slack is a Linux property');
  const module = new URL('../lib/timer-slack.js', import.meta.url).href;
  const mainBefore = readFileSync('/proc/self/timerslack_ns', 'utf8').trim();
  const w = new Worker(
    `const { parentPort } = require('node:worker_threads');
     import(${JSON.stringify(module)}).then((m) => {
       const before = m.threadTimerSlack();
       const ok = m.setThreadTimerSlack(1000);
       const refused = m.setThreadTimerSlack(0);
       parentPort.postMessage({ before, ok, refused, after: m.threadTimerSlack() });
     });`,
    { eval: true },
  );
  const got = await new Promise<{ before: number; ok: boolean; refused: boolean; after: number }>((resolve, reject) => {
    w.once('message', resolve);
    w.once('error', reject);
  });
  await w.terminate();
  assert.deepEqual(got, { before: Number(mainBefore), ok: true, refused: false, after: 1000 });
  assert.equal(readFileSync('/proc/self/timerslack_ns', 'utf8').trim(), mainBefore, 'the main thread keeps its slack');
});
