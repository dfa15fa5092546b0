import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Worker } from 'node:worker_threads';
import { asFloat32, hostArray, Runtime } from '../lib/index.js';
import { ADD } from './programs.js';

// Each thread has its own environment (constructors, task pool, completion channel) over the one
// process-wide plugin; a thread that exits with live objects is cleaned up by the teardown hook.
const THREAD = `
const { parentPort } = require('node:worker_threads');
(async () => {
  const { Runtime, hostArray } = await import(${JSON.stringify(new URL('../lib/index.js', import.meta.url).href)});
  const rt = await Runtime.create();
  const exe = await rt.compile(\`${ADD(4)}\`);
  const x = hostArray('f32', [4], new Float32Array([1, 2, 3, 4]));
  const buf = await rt.upload(x);           // deliberately left undisposed
  const [out] = await exe.run([x, buf]);
  parentPort.postMessage(Array.from(new Float32Array(out.data.buffer, out.data.byteOffset, 4)));
})().catch((e) => parentPort.postMessage(String(e)));
`;

test('runtimes in worker threads run independently and are torn down with their thread', async () => {
  const results = await Promise.all(
    [0, 1].map(
      () =>
        new Promise<unknown>((resolve, reject) => {
          const w = new Worker(THREAD, { eval: true });
          w.once('message', (m) => {
            resolve(m);
            void w.terminate();
          });
          w.once('error', reject);
        }),
    ),
  );
  assert.deepEqual(results, [
    [2, 4, 6, 8],
    [2, 4, 6, 8],
  ]);
  // The main thread's environment is unaffected.
  const rt = await Runtime.create();
  const exe = await rt.compile(ADD(4));
  const [out] = await exe.run([
    hostArray('f32', [4], new Float32Array([1, 1, 1, 1])),
    hostArray('f32', [4], new Float32Array([2, 2, 2, 2])),
  ]);
  assert.deepEqual(Array.from(asFloat32(out!)), [3, 3, 3, 3]);
  rt.dispose();
});
