import assert from 'node:assert/strict';
import { after, before, suite, test } from 'node:test';
import { ArgumentError, DisposedError, hostArray, Runtime, type DeviceArena } from '../lib/index.js';
import { ADD, DOT, matmul64, randomF32 } from './programs.js';

const MIB = 1 << 20;

function f32(data: Uint8Array): Float32Array {
  return new Float32Array(data.buffer, data.byteOffset, data.byteLength / 4);
}

suite('device arena (CPU plugin)', () => {
  let rt: Runtime;
  before(async () => {
    rt = await Runtime.create();
  });
  after(() => rt.dispose());

  const withArena = async (limitBytes: number, body: (a: DeviceArena) => Promise<void>, chunkBytes?: number) => {
    const a = rt.createArena({ limitBytes, ...(chunkBytes ? { chunkBytes } : {}) });
    try {
      await body(a);
    } finally {
      a.dispose();
    }
  };

  test('placed arrays are device buffers with their contents, and programs run on them', async () => {
    assert.equal(rt.hostAddressableDevice, true);
    await withArena(4 * MIB, async (arena) => {
      const n = 1000;
      const a = randomF32(n, 1);
      const b = randomF32(n, 2);
      const [da, db] = (await arena.place([hostArray('f32', [n], a), hostArray('f32', [n], b)]))!;
      assert.equal(da!.memoryKind, 'device');
      assert.equal(da!.dtype, 'f32');
      assert.deepEqual(da!.shape, [n]);
      assert.equal(da!.onDeviceBytes, 4 * n);
      assert.deepEqual(f32((await da!.toHost()).data), a);
      const exe = await rt.compile(ADD(n));
      const [sum] = await exe.run([da!, db!]);
      const got = f32(sum!.data);
      for (let i = 0; i < n; i++) assert.equal(got[i], Math.fround(a[i]! + b[i]!));
      const s = arena.stats();
      assert.equal(s.ranges, 2);
      assert.ok(s.usedBytes >= 8 * n && s.usedBytes < 8 * n + 512, `used ${s.usedBytes}`);
      da!.dispose();
      db!.dispose();
      assert.equal(arena.stats().usedBytes, 0, 'disposing a view returns its range');
      exe.dispose();
    });
  });

  test('freed ranges are reused and coalesce; memory is mapped once', async () => {
    await withArena(2 * MIB, async (arena) => {
      const quarter = hostArray('u8', [MIB / 4], new Uint8Array(MIB / 4));
      const [a, b, c] = (await arena.place([quarter, quarter, quarter]))!;
      const mapped = arena.stats().mappedBytes;
      assert.equal(mapped, 2 * MIB, 'a small arena maps its whole limit at once');
      b!.dispose();
      a!.dispose();
      // a and b were neighbours: together they are one half-MiB hole again.
      const half = hostArray('u8', [MIB / 2], new Uint8Array(MIB / 2).fill(7));
      const [h] = (await arena.place([half]))!;
      assert.equal(arena.stats().mappedBytes, mapped);
      assert.deepEqual(new Uint8Array((await h!.toHost()).data), half.data);
      for (const x of [c, h]) x!.dispose();
      const s = arena.stats();
      assert.equal(s.usedBytes, 0);
      assert.equal(s.largestFreeBytes, 2 * MIB, 'every range coalesced back into one');
    });
  });

  test('what does not fit is refused whole, with nothing reserved, and the arena serves on', async () => {
    await withArena(
      3 * MIB,
      async (arena) => {
        const mib = (seed: number) => hostArray('f32', [MIB / 4], randomF32(MIB / 4, seed));
        // Four 1 MiB arrays: several lanes, the last ones cannot fit under a 3 MiB limit.
        assert.equal(await arena.place([mib(1), mib(2), mib(3), mib(4)]), null);
        const s = arena.stats();
        assert.equal(s.usedBytes, 0);
        assert.equal(s.ranges, 0);
        assert.ok(s.failedPlacements >= 1);
        const fits = (await arena.place([mib(5), mib(6)]))!;
        assert.deepEqual(f32((await fits[1]!.toHost()).data), randomF32(MIB / 4, 6));
        for (const b of fits) b.dispose();
      },
      MIB,
    );
  });

  test('chunks: mapped on demand up to the limit; a lower limit unmaps empty ones', async () => {
    await withArena(
      4 * MIB,
      async (arena) => {
        assert.equal(arena.stats().mappedBytes, 0, 'nothing is mapped before the first placement');
        const one = () => hostArray('u8', [MIB], new Uint8Array(MIB));
        const placed = [];
        for (let i = 0; i < 4; i++) placed.push(...(await arena.place([one()]))!);
        assert.equal(arena.stats().chunks, 4);
        assert.equal(await arena.place([one()]), null, 'the limit holds');
        for (const b of placed.splice(0, 2)) b.dispose();
        arena.setLimit(2 * MIB);
        assert.equal(arena.stats().mappedBytes, 2 * MIB, 'the two empty chunks went');
        for (const b of placed) b.dispose();
        assert.throws(() => arena.setLimit(-1), ArgumentError);
      },
      MIB,
    );
  });

  test('refill writes new contents into the same views; wrong shapes and foreign buffers are refused', async () => {
    await withArena(4 * MIB, async (arena) => {
      const m = 8;
      const k = 16;
      const n = 4;
      const w1 = randomF32(k * n, 10);
      const w2 = randomF32(k * n, 11);
      const [w] = (await arena.place([hostArray('f32', [k, n], w1)]))!;
      const exe = await rt.compile(DOT(m, k, n));
      const x = randomF32(m * k, 12);
      const run = async () => f32((await exe.run([hostArray('f32', [m, k], x), w!]))[0]!.data);
      const first = await run();
      const again = await arena.refill([w!], [hostArray('f32', [k, n], w2)]);
      assert.equal(again[0], w, 'the same buffer comes back');
      const second = await run();
      const want = matmul64(x, w2, m, k, n);
      for (let i = 0; i < want.length; i++) assert.ok(Math.abs(second[i]! - want[i]!) < 1e-4);
      assert.notDeepEqual(first, second);
      await assert.rejects(arena.refill([w!], [hostArray('f32', [n, k], w1)]), ArgumentError);
      await assert.rejects(arena.refill([w!], []), ArgumentError);
      const plain = await rt.upload(hostArray('f32', [k, n], w1));
      await assert.rejects(arena.refill([plain], [hostArray('f32', [k, n], w1)]), /not a view of this arena/);
      plain.dispose();
      w!.dispose();
      await assert.rejects(arena.refill([w!], [hostArray('f32', [k, n], w1)]), DisposedError);
      exe.dispose();
    });
  });

  test('a range stays taken until the execution reading its view has finished', async () => {
    await withArena(
      8 * MIB,
      async (arena) => {
        const m = 64;
        const k = 512;
        const n = 512;
        const wData = randomF32(k * n, 20);
        const xData = randomF32(m * k, 21);
        const exe = await rt.compile(DOT(m, k, n));
        const want = matmul64(xData, wData, m, k, n);
        for (let round = 0; round < 5; round++) {
          const [w] = (await arena.place([hostArray('f32', [k, n], wData)]))!;
          const running = exe.run([hostArray('f32', [m, k], xData), w!]);
          // Disposed while the execution may still read it; new data placed at once must land
          // elsewhere or wait, never over the weights in use.
          w!.dispose();
          const other = (await arena.place([hostArray('f32', [k, n], new Float32Array(k * n).fill(1e6))]))!;
          const got = f32((await running)[0]!.data);
          for (let i = 0; i < want.length; i += 97) assert.ok(Math.abs(got[i]! - want[i]!) < 1e-3, `round ${round}`);
          other[0]!.dispose();
        }
        exe.dispose();
      },
      4 * MIB,
    );
  });

  test('views outlive a disposed arena; the arena refuses new work', async () => {
    const arena = rt.createArena({ limitBytes: MIB });
    const data = randomF32(64, 30);
    const [v] = (await arena.place([hostArray('f32', [64], data)]))!;
    arena.dispose();
    assert.deepEqual(f32((await v!.toHost()).data), data);
    v!.dispose();
    await assert.rejects(arena.place([hostArray('f32', [1], new Float32Array(1))]), ArgumentError);
  });

  test('bad arguments are ArgumentErrors and leave the runtime serving', async () => {
    assert.throws(() => rt.createArena({ limitBytes: -1 }), ArgumentError);
    assert.throws(() => rt.createArena({ limitBytes: 1.5 }), ArgumentError);
    assert.throws(() => rt.createArena({ limitBytes: MIB, chunkBytes: 0 }), ArgumentError);
    assert.throws(() => rt.createArena({ limitBytes: MIB, device: 3 }), ArgumentError);
    await withArena(MIB, async (arena) => {
      await assert.rejects(
        arena.place([{ dtype: 'f32', shape: [3], data: new Uint8Array(8) }]),
        /needs 12 bytes but data has 8/,
      );
      await assert.rejects(
        arena.place([{ dtype: 'f99' as 'f32', shape: [1], data: new Uint8Array(4) }]),
        ArgumentError,
      );
      assert.deepEqual(await arena.place([]), []);
      assert.equal(arena.stats().usedBytes, 0);
      const [ok] = (await arena.place([hostArray('f32', [2], new Float32Array([1, 2]))]))!;
      assert.deepEqual(f32((await ok!.toHost()).data), new Float32Array([1, 2]));
      ok!.dispose();
    });
  });
});
