import assert from 'node:assert/strict';
import { after, before, suite, test } from 'node:test';
import { ArgumentError, asFloat32, BoundArguments, DisposedError, hostArray, Runtime } from '../lib/index.js';
import { ADD, CONV, conv64, DOT, matmul64, maxRelError, MLP, randomF32 } from './programs.js';

suite('numerics on the real CPU plugin (float64 reference, relative error < 1e-5)', () => {
  let rt: Runtime;
  before(async () => {
    rt = await Runtime.create({ plugin: 'cpu' });
  });
  after(() => rt.dispose());

  test('elementwise add', async () => {
    const n = 1000;
    const a = randomF32(n, 1);
    const b = randomF32(n, 2);
    const exe = await rt.compile(ADD(n));
    const [out] = await exe.run([hostArray('f32', [n], a), hostArray('f32', [n], b)]);
    const want = Float64Array.from(a, (x, i) => x + b[i]!);
    assert.deepEqual(out!.shape, [n]);
    assert.ok(maxRelError(asFloat32(out!), want) < 1e-5);
  });

  test('dot', async () => {
    const [m, k, n] = [17, 33, 9];
    const a = randomF32(m * k, 3);
    const b = randomF32(k * n, 4);
    const exe = await rt.compile(DOT(m, k, n));
    const [out] = await exe.run([hostArray('f32', [m, k], a), hostArray('f32', [k, n], b)]);
    assert.deepEqual(out!.shape, [m, n]);
    assert.ok(maxRelError(asFloat32(out!), matmul64(a, b, m, k, n)) < 1e-5);
  });

  test('convolution (NHWC, 3x3, SAME)', async () => {
    const [n, h, w, ci, co] = [2, 7, 6, 3, 4];
    const x = randomF32(n * h * w * ci, 5);
    const k = randomF32(9 * ci * co, 6);
    const exe = await rt.compile(CONV(n, h, w, ci, co));
    const [out] = await exe.run([hostArray('f32', [n, h, w, ci], x), hostArray('f32', [3, 3, ci, co], k)]);
    assert.deepEqual(out!.shape, [n, h, w, co]);
    assert.ok(maxRelError(asFloat32(out!), conv64(x, k, n, h, w, ci, co)) < 1e-5);
  });

  test('small MLP with device-resident weights', async () => {
    const [b, i, h, o] = [4, 8, 16, 3];
    const x = randomF32(b * i, 7);
    const w1 = randomF32(i * h, 8);
    const b1 = randomF32(h, 9);
    const w2 = randomF32(h * o, 10);
    const b2 = randomF32(o, 11);
    const exe = await rt.compile(MLP(b, i, h, o));
    const weights = await Promise.all([
      rt.upload(hostArray('f32', [i, h], w1)),
      rt.upload(hostArray('f32', [h], b1)),
      rt.upload(hostArray('f32', [h, o], w2)),
      rt.upload(hostArray('f32', [o], b2)),
    ]);
    const [out] = await exe.run([hostArray('f32', [b, i], x), ...weights]);
    const hidden = matmul64(x, w1, b, i, h).map((v, j) => Math.max(0, v + b1[j % h]!));
    const want = matmul64(hidden, w2, b, h, o).map((v, j) => v + b2[j % o]!);
    assert.ok(maxRelError(asFloat32(out!), want) < 1e-5);
    for (const w of weights) w.dispose();
  });

  test('inputs viewed over a SharedArrayBuffer (at an offset) run as any other: run, runInline, upload', async () => {
    const n = 64;
    const a = randomF32(n, 21);
    const b = randomF32(n, 22);
    const shared = new SharedArrayBuffer(4 * (2 * n + 8));
    const sa = new Float32Array(shared, 16, n);
    const sb = new Float32Array(shared, 16 + 4 * n, n);
    sa.set(a);
    sb.set(b);
    const exe = await rt.compile(ADD(n));
    const want = Float64Array.from(a, (x, i) => x + b[i]!);
    const args = [hostArray('f32', [n], sa), hostArray('f32', [n], sb)];
    const [pooled] = await exe.run(args);
    assert.ok(maxRelError(asFloat32(pooled!), want) < 1e-5);
    const inline = exe.runInline(args);
    assert.ok(inline !== null);
    assert.ok(maxRelError(asFloat32(inline[0]!), want) < 1e-5);
    const onDevice = await rt.upload(hostArray('f32', [n], sa));
    const [viaDevice] = await exe.run([onDevice, hostArray('f32', [n], sb)]);
    assert.ok(maxRelError(asFloat32(viaDevice!), want) < 1e-5);
    onDevice.dispose();
    exe.dispose();
  });

  test('runInline: the same outputs as run(), on the calling thread; a disposed argument throws at once', async () => {
    const [b, i, h, o] = [1, 8, 16, 3];
    const x = randomF32(b * i, 12);
    const exe = await rt.compile(MLP(b, i, h, o));
    const weights = await Promise.all([
      rt.upload(hostArray('f32', [i, h], randomF32(i * h, 13))),
      rt.upload(hostArray('f32', [h], randomF32(h, 14))),
      rt.upload(hostArray('f32', [h, o], randomF32(h * o, 15))),
      rt.upload(hostArray('f32', [o], randomF32(o, 16))),
    ]);
    const args = [hostArray('f32', [b, i], x), ...weights];
    const [pooled] = await exe.run(args);
    const inline = exe.runInline(args);
    assert.ok(inline !== null, 'the asynchronous client never answers busy');
    assert.equal(inline.length, 1);
    assert.deepEqual(inline[0]!.shape, pooled!.shape);
    assert.equal(inline[0]!.dtype, 'f32');
    assert.deepEqual([...asFloat32(inline[0]!)], [...asFloat32(pooled!)]);
    weights[0]!.dispose();
    assert.throws(() => exe.runInline(args), DisposedError);
    for (const w of weights) w.dispose();
    exe.dispose();
  });

  test('bound arguments: the same outputs as passing the buffers; checked against the signature; disposal still refused', async () => {
    const [b, i, h, o] = [2, 8, 16, 3];
    const x = hostArray('f32', [b, i], randomF32(b * i, 17));
    const exe = await rt.compile(MLP(b, i, h, o));
    const weights = await Promise.all([
      rt.upload(hostArray('f32', [i, h], randomF32(i * h, 18))),
      rt.upload(hostArray('f32', [h], randomF32(h, 19))),
      rt.upload(hostArray('f32', [h, o], randomF32(h * o, 20))),
      rt.upload(hostArray('f32', [o], randomF32(o, 21))),
    ]);
    const bound = new BoundArguments(weights);
    const [spread] = await exe.run([x, ...weights]);
    const [viaBound] = await exe.run([x], { bound });
    const inline = exe.runInline([x], { bound });
    assert.deepEqual([...asFloat32(viaBound!)], [...asFloat32(spread!)]);
    assert.deepEqual([...asFloat32(inline![0]!)], [...asFloat32(spread!)]);
    const [onDevice] = await exe.runToDevice([x], { bound });
    assert.deepEqual(onDevice!.shape, [b, o]);
    onDevice!.dispose();
    // Too few arguments in all, or a bound list in the wrong order, is refused before the addon.
    await assert.rejects(exe.run([], { bound }), ArgumentError);
    await assert.rejects(exe.run([x], { bound: new BoundArguments([...weights].reverse()) }), ArgumentError);
    weights[2]!.dispose();
    await assert.rejects(exe.run([x], { bound }), DisposedError);
    assert.throws(() => exe.runInline([x], { bound }), DisposedError);
    assert.throws(() => new BoundArguments(weights), DisposedError);
    for (const w of weights) w.dispose();
    exe.dispose();
  });
});
