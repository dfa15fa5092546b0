import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { suite, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

// The built scheduler, next to this test's own build output (engine/dist/test -> engine/dist/src).
const schedulerUrl = pathToFileURL(
  resolve(fileURLToPath(import.meta.url), '..', '..', '..', 'src', 'scheduler', 'scheduler.js'),
).href;

/**
 * Runs `body` in a fresh Node process with the system clock and nothing else to keep its event
 * loop alive: what an embedder (or a bench) of the engine has, unlike a server with open sockets.
 */
function runAlone(body: string): { status: number | null; stdout: string; stderr: string } {
  const script = `
    import { Scheduler } from ${JSON.stringify(schedulerUrl)};
    const executor = {
      prepare: async () => ({ release() {} }),
      execute: async (req) => req.inputs,
    };
    const x = (rows) => [{ name: 'x', dtype: 'f32', shape: [rows, 1], data: new Uint8Array(4 * rows) }];
    ${body}
    console.log('answered');
  `;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 20_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

suite('scheduler timers keep the process alive while a caller waits', () => {
  // A batching window that is still open, with nothing else pending, used to let Node exit
  // (code 13, unsettled await) with the request never answered: the wake timer was unref'd.
  test('a request waiting for its batching window is answered', () => {
    const r = runAlone(`
      const s = new Scheduler({ executor, maxQueueDelayUs: 20000 });
      const m = s.addModel({ name: 'm', compiledBatchSizes: [1, 8], inputBatchAxes: [0], outputBatchAxes: [0] });
      await s.submit(m, x(1));
    `);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /answered/);
  });

  test('a queued request whose deadline passes is answered with DEADLINE_EXCEEDED', () => {
    const r = runAlone(`
      let release;
      const blocked = { ...executor, execute: (req) => new Promise((ok) => { release = () => ok(req.inputs); }) };
      const s = new Scheduler({ executor: blocked });
      const m = s.addModel({ name: 'm', compiledBatchSizes: [1], inputBatchAxes: [0], outputBatchAxes: [0] });
      const first = s.submit(m, x(1));
      const late = s.submit(m, x(1), { deadline: s.now() + 30 });
      const code = await late.then(() => 'ok', (e) => e.code);
      release();
      await first;
      console.log(code);
    `);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /HLO_ERR_DEADLINE_EXCEEDED\s+answered/);
  });
});
