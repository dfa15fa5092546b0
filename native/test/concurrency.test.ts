import assert from 'node:assert/strict';
import { after, before, suite, test } from 'node:test';
import { asFloat32, hostArray, Runtime } from '../lib/index.js';
import { DOT, matmul64, maxRelError, randomF32 } from './programs.js';

suite('concurrency', () => {
  let rt: Runtime;
  before(async () => {
    rt = await Runtime.create();
  });
  after(() => rt.dispose());

  test('64 concurrent executes from separate promises all return the right answers', async () => {
    const [m, k, n] = [8, 16, 8];
    const exe = await rt.compile(DOT(m, k, n));
    const w = await rt.upload(hostArray('f32', [k, n], randomF32(k * n, 99)));
    const wHost = randomF32(k * n, 99);
    const inputs = Array.from({ length: 64 }, (_, i) => randomF32(m * k, 1000 + i));
    const outs = await Promise.all(inputs.map((x) => exe.run([hostArray('f32', [m, k], x), w])));
    outs.forEach((o, i) => {
      assert.ok(maxRelError(asFloat32(o[0]!), matmul64(inputs[i]!, wHost, m, k, n)) < 1e-5, `request ${i}`);
    });
  });

  test('the event loop keeps turning while a large execute runs', async () => {
    const [m, k, n] = [512, 512, 512];
    const exe = await rt.compile(DOT(m, k, n));
    const a = hostArray('f32', [m, k], randomF32(m * k, 1));
    const b = hostArray('f32', [k, n], randomF32(k * n, 2));
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    const started = performance.now();
    await Promise.all(Array.from({ length: 8 }, () => exe.run([a, b])));
    const elapsed = performance.now() - started;
    clearInterval(timer);
    // A blocked loop would see ~0 ticks; any turning loop sees some per 10 ms of work.
    assert.ok(ticks > 0 || elapsed < 5, `no timer ticks during ${elapsed.toFixed(1)} ms of device work`);
  });
});
