import assert from 'node:assert/strict';
import { after, before, suite, test } from 'node:test';
import { binding } from '../lib/binding.js';
import { copyLanes } from '../lib/runtime.js';
import { ArgumentError, DisposedError, hostArray, Runtime } from '../lib/index.js';
import { ADD, randomF32 } from './programs.js';

const asF32 = (b: Uint8Array): Float32Array => new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);

function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

suite('lifetime and memory', () => {
  let rt: Runtime;
  before(async () => {
    rt = await Runtime.create();
  });
  after(() => rt.dispose());

  test('10,000 execute cycles leave RSS within 5%', async () => {
    const n = 4096;
    const exe = await rt.compile(ADD(n));
    const w = await rt.upload(hostArray('f32', [n], randomF32(n, 1)));
    const x = hostArray('f32', [n], randomF32(n, 2));
    const cycle = async () => {
      const [out] = await exe.run([x, w]);
      const dev = await rt.upload(out!);
      const back = await dev.toHost();
      dev.dispose();
      return back.data.byteLength;
    };
    for (let i = 0; i < 1000; i++) await cycle(); // warm allocator pools and JIT
    gc();
    const before = process.memoryUsage().rss;
    for (let i = 0; i < 10_000; i++) await cycle();
    gc();
    await new Promise((r) => setTimeout(r, 50));
    gc();
    const afterRss = process.memoryUsage().rss;
    const growth = (afterRss - before) / before;
    assert.ok(growth < 0.05, `RSS grew ${(growth * 100).toFixed(2)}% (${before} -> ${afterRss})`);
    assert.equal(rt.ledger().liveBuffers, 1, 'only the weight buffer should be alive');
    // Disposed here, not left to the collector: a finalizer running during a later test would
    // change the ledger that test compares (liveExecutables 2 -> 1 made the copyTo test flaky).
    exe.dispose();
    w.dispose();
  });

  test('compile and deserializeAndLoad hold the bytes they read in place until they settle', async () => {
    const n = 1024;
    const x = hostArray('f32', [n], randomF32(n, 3));
    const w = hostArray('f32', [n], randomF32(n, 4));
    const expected = new Float32Array(n).map((_, i) => asF32(x.data)[i]! + asF32(w.data)[i]!);
    // Only the call holds the program: its ArrayBuffer must outlive a collection during the build.
    const compiling = rt.compile(new TextEncoder().encode(ADD(n)));
    gc();
    const exe = await compiling;
    const [out] = await exe.run([x, w]);
    assert.deepEqual(asF32(out!.data), expected);
    const loading = rt.deserializeAndLoad(new Uint8Array(await exe.serialize()), { signature: exe.signature! });
    gc();
    const loaded = await loading;
    const [again] = await loaded.run([x, w]);
    assert.deepEqual(asF32(again!.data), expected);
    exe.dispose();
    loaded.dispose();
  });

  test('dispose frees buffers deterministically (ledger)', async () => {
    const before = rt.ledger();
    const bufs = await Promise.all(
      Array.from({ length: 10 }, (_, i) => rt.upload(hostArray('f32', [256], randomF32(256, i)))),
    );
    assert.equal(rt.ledger().liveBuffers, before.liveBuffers + 10);
    assert.equal(rt.ledger().liveBufferBytes, before.liveBufferBytes + 10 * 1024);
    for (const b of bufs) b.dispose();
    assert.deepEqual(rt.ledger(), before);
  });

  test('memory spaces: pinned_host staging, copy to device, execute', async () => {
    assert.deepEqual(rt.memoryKinds(), ['device', 'pinned_host', 'unpinned_host']);
    assert.equal(rt.memoryStats(), null, 'the CPU plugin keeps no allocator statistics');
    const n = 64;
    const data = randomF32(n, 3);
    const staged = await rt.upload(hostArray('f32', [n], data), { memory: 'pinned_host' });
    assert.equal(staged.memoryKind, 'pinned_host');
    const onDevice = await staged.copyTo('device');
    assert.equal(onDevice.memoryKind, 'device');
    const exe = await rt.compile(ADD(n));
    const [out] = await exe.run([onDevice, onDevice]);
    const got = new Float32Array(out!.data.buffer, out!.data.byteOffset, n);
    got.forEach((v, i) => assert.equal(v, data[i]! * 2));
    staged.dispose();
    onDevice.dispose();
    exe.dispose();
  });

  test('copyTo(buffers, kind) copies many buffers in one batch, contents and ledger exact', async () => {
    const before = rt.ledger();
    const sizes = [1, 7, 64, 1000, 4096];
    const datas = sizes.map((n, i) => randomF32(n, 10 + i));
    const staged = await Promise.all(
      datas.map((d) => rt.upload(hostArray('f32', [d.length], d), { memory: 'pinned_host' })),
    );
    const copies = await rt.copyTo(staged, 'device');
    assert.equal(copies.length, sizes.length);
    for (const [i, c] of copies.entries()) {
      assert.equal(c.memoryKind, 'device');
      assert.deepEqual(c.shape, [sizes[i]]);
      const back = await c.toHost();
      assert.deepEqual(new Float32Array(back.data.buffer, back.data.byteOffset, sizes[i]), datas[i]);
    }
    assert.equal(rt.ledger().liveBuffers, before.liveBuffers + 2 * sizes.length);
    assert.deepEqual(await rt.copyTo([], 'device'), []);
    for (const b of [...staged, ...copies]) b.dispose();
    assert.deepEqual(rt.ledger(), before);
  });

  test('copyTo: dtypes and shapes land exactly (scalar, 3-D, zero elements) and outlive their source', async () => {
    const cases = [
      hostArray(
        'i8',
        [2, 3, 4],
        new Int8Array(24).map((_, i) => i - 12),
      ),
      hostArray('f32', [], new Float32Array([2.5])),
      hostArray('bf16', [3], new Uint8Array([0x80, 0x3f, 0x00, 0x40, 0x40, 0x40])),
      hostArray('f32', [0, 5], new Float32Array(0)),
      hostArray('bool', [5], new Uint8Array([1, 0, 0, 1, 1])),
    ];
    const staged = await Promise.all(cases.map((h) => rt.upload(h, { memory: 'pinned_host' })));
    const copies = await rt.copyTo(staged, 'device');
    // The copies own their bytes: freeing the staging buffers first must not change them.
    for (const b of staged) b.dispose();
    for (const [i, c] of copies.entries()) {
      const want = cases[i]!;
      assert.equal(c.memoryKind, 'device');
      assert.equal(c.dtype, want.dtype);
      assert.deepEqual(c.shape, want.shape);
      const back = await c.toHost();
      assert.deepEqual(
        new Uint8Array(back.data.buffer, back.data.byteOffset, back.data.byteLength),
        new Uint8Array(want.data.buffer, want.data.byteOffset, want.data.byteLength),
      );
      c.dispose();
    }
  });

  test('copyTo spreads a large batch over lanes; contents land in order; a failed lane leaves nothing', async () => {
    const n = 1 << 19; // 2 MiB of f32 each: 12 MiB in all, several lanes
    const datas = Array.from({ length: 6 }, (_, i) => randomF32(n - i, 40 + i));
    const staged = await Promise.all(
      datas.map((d) => rt.upload(hostArray('f32', [d.length], d), { memory: 'pinned_host' })),
    );
    assert.ok(copyLanes(staged, binding().workerThreads).length > 1, 'the batch must use several lanes');
    const before = rt.ledger();
    const copies = await rt.copyTo(staged, 'device');
    for (const [i, c] of copies.entries()) {
      const back = await c.toHost();
      assert.deepEqual(new Float32Array(back.data.buffer, back.data.byteOffset, datas[i]!.length), datas[i]);
    }
    for (const c of copies) c.dispose();
    staged[5]!.dispose();
    await assert.rejects(rt.copyTo(staged, 'device'), DisposedError);
    assert.deepEqual(rt.ledger(), {
      ...before,
      liveBuffers: before.liveBuffers - 1,
      liveBufferBytes: before.liveBufferBytes - staged[5]!.onDeviceBytes,
    });
    for (const b of staged.slice(0, 5)) b.dispose();
  });

  test('disposeInBackground: disposed at once, destroyed on an addon thread, in use until then', async () => {
    const before = rt.ledger();
    const n = 1 << 16;
    const data = randomF32(n, 50);
    const exe = await rt.compile(ADD(n));
    const bufs = await Promise.all(Array.from({ length: 8 }, () => rt.upload(hostArray('f32', [n], data))));
    // An execution still reading one of them keeps it alive until it is done.
    const running = exe.run([bufs[0]!, bufs[1]!]);
    bufs[7]!.dispose();
    rt.disposeInBackground(bufs);
    assert.ok(bufs.every((b) => b.disposed));
    await assert.rejects(bufs[2]!.toHost(), DisposedError);
    const [sum] = await running;
    assert.equal(new Float32Array(sum!.data.buffer, sum!.data.byteOffset, n)[5], data[5]! * 2);
    for (let i = 0; i < 500 && rt.ledger().liveBuffers !== before.liveBuffers; i++)
      await new Promise((r) => setTimeout(r, 1));
    assert.deepEqual(rt.ledger(), { ...before, liveExecutables: before.liveExecutables + 1 });
    assert.throws(() => rt.disposeInBackground([{} as never]), ArgumentError);
    rt.disposeInBackground([]);
    exe.dispose();
  });

  test('Executable.disposeInBackground: disposed at once, destroyed on the background lane, an execution in flight finishes', async () => {
    const before = rt.ledger();
    const n = 1 << 16;
    const data = randomF32(n, 51);
    const exe = await rt.compile(ADD(n));
    const idle = await rt.compile(ADD(n));
    const x = await rt.upload(hostArray('f32', [n], data));
    const running = exe.run([x, x]);
    exe.disposeInBackground();
    idle.disposeInBackground();
    assert.ok(exe.disposed && idle.disposed);
    await assert.rejects(idle.run([x, x]), DisposedError);
    const [sum] = await running;
    assert.equal(new Float32Array(sum!.data.buffer, sum!.data.byteOffset, n)[7], data[7]! * 2);
    for (let i = 0; i < 2000 && rt.ledger().liveExecutables !== before.liveExecutables; i++)
      await new Promise((r) => setTimeout(r, 1));
    assert.equal(rt.ledger().liveExecutables, before.liveExecutables);
    exe.disposeInBackground(); // a second dispose is a no-op
    exe.dispose();
    x.dispose();
  });

  test('copyLanes: one lane for small batches, balanced by bytes for large ones', () => {
    const mib = 1 << 20;
    const sizes = (xs: number[]) => xs.map((onDeviceBytes) => ({ onDeviceBytes }));
    assert.deepEqual(copyLanes(sizes([10, 20, 30]), 4), [[2, 1, 0]]);
    assert.deepEqual(copyLanes(sizes([4 * mib, 1 * mib, 3 * mib, 2 * mib]), 2), [
      [0, 1],
      [2, 3],
    ]);
    assert.equal(copyLanes(sizes(Array<number>(16).fill(4 * mib)), 4).length, 4);
    assert.equal(copyLanes(sizes([64 * mib]), 4).length, 1, 'never more lanes than buffers');
    assert.deepEqual(copyLanes([], 4), [[]]);
  });

  test('plugin facts: API version, StableHLO range, one CPU device', () => {
    assert.deepEqual(rt.plugin.apiVersion, [0, 115]);
    assert.deepEqual(rt.plugin.attributes.stablehlo_current_version, [1, 20, 0]);
    assert.equal(rt.platformName, 'cpu');
    assert.equal(rt.devices.length, 1);
  });
});
