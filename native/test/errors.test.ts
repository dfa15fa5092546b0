import assert from 'node:assert/strict';
import { after, before, suite, test } from 'node:test';
import { binding } from '../lib/binding.js';
import {
  ArgumentError,
  DisposedError,
  hostArray,
  PjrtError,
  resolvePlugin,
  Runtime,
  type Executable,
} from '../lib/index.js';
import { ADD, IDENTITY } from './programs.js';

const x4 = () => hostArray('f32', [4], new Float32Array([1, 2, 3, 4]));

suite('bad calls give typed errors and the process keeps working', () => {
  let rt: Runtime;
  let add: Executable;
  before(async () => {
    rt = await Runtime.create();
    add = await rt.compile(ADD(4));
  });
  after(() => rt.dispose());

  async function stillWorks() {
    const [out] = await add.run([x4(), x4()]);
    assert.deepEqual(Array.from(new Float32Array(out!.data.buffer, out!.data.byteOffset, 4)), [2, 4, 6, 8]);
  }

  test('EXPECTED FAILURE - malformed MLIR is a PjrtError', async () => {
    await assert.rejects(rt.compile('module { this is not mlir }'), (e: unknown) => {
      assert.ok(e instanceof PjrtError);
      assert.equal(e.name, 'PjrtError');
      assert.match(e.message, /error/i);
      return true;
    });
    await assert.rejects(rt.compile(new Uint8Array([0x4d, 0x4c, 0xef, 0x52, 1, 2, 3])), PjrtError);
    await stillWorks();
  });

  test('BAD CALL - wrong argument count', async () => {
    await assert.rejects(
      add.run([x4()]),
      (e: unknown) => e instanceof ArgumentError && /expected 2 arguments, got 1/.test(e.message),
    );
    await stillWorks();
  });

  test('EXPECTED FAILURE - a wrong argument count that reaches the plugin is a PjrtError', async () => {
    // Without a known signature (as for bytecode programs) the plugin itself must refuse.
    const bare = await rt.compile(ADD(4), { signature: { parameters: [], results: [] } });
    await assert.rejects(bare.run([]), (e: unknown) => e instanceof PjrtError && e.codeName === 'INVALID_ARGUMENT');
    await stillWorks();
  });

  test('BAD CALL - wrong dims', async () => {
    const x3 = hostArray('f32', [3], new Float32Array(3));
    await assert.rejects(
      add.run([x3, x4()]),
      (e: unknown) => e instanceof ArgumentError && /expected f32\[4\], got f32\[3\]/.test(e.message),
    );
    await stillWorks();
  });

  test('BAD CALL - wrong dtype of the same byte size', async () => {
    const i4 = hostArray('i32', [4], new Int32Array(4));
    await assert.rejects(
      add.run([i4, x4()]),
      (e: unknown) => e instanceof ArgumentError && /expected f32\[4\], got i32\[4\]/.test(e.message),
    );
    await stillWorks();
  });

  test('BAD CALL - data length does not match shape and dtype', async () => {
    await assert.rejects(async () => rt.upload({ dtype: 'f32', shape: [4], data: new Uint8Array(15) }), ArgumentError);
    await assert.rejects(
      async () => rt.upload({ dtype: 'c64' as never, shape: [1], data: new Uint8Array(8) }),
      ArgumentError,
    );
    await assert.rejects(async () => rt.upload({ dtype: 'f32', shape: [-1], data: new Uint8Array(0) }), ArgumentError);
    await assert.rejects(async () => rt.upload(null as never), ArgumentError);
    await stillWorks();
  });

  test('BAD CALL - unknown memory space and device', async () => {
    await assert.rejects(async () => rt.upload(x4(), { memory: 'hbm9' }), /has no 'hbm9' memory/);
    await assert.rejects(async () => rt.upload(x4(), { device: 3 }), /out of range/);
    await stillWorks();
  });

  test('EXPECTED FAILURE - use after dispose (buffer, executable)', async () => {
    const buf = await rt.upload(x4());
    buf.dispose();
    await assert.rejects(add.run([buf, x4()]), DisposedError);
    await assert.rejects(buf.toHost(), DisposedError);
    const exe = await rt.compile(IDENTITY('4', 'f32'));
    exe.dispose();
    await assert.rejects(exe.run([x4()]), DisposedError);
    await stillWorks();
  });

  test('EXPECTED FAILURE - batched copyTo: disposed, foreign, non-buffer, unknown memory', async () => {
    const live = await rt.upload(x4(), { memory: 'pinned_host' });
    const gone = await rt.upload(x4(), { memory: 'pinned_host' });
    gone.dispose();
    const before = rt.ledger();
    await assert.rejects(rt.copyTo([live, gone], 'device'), DisposedError);
    assert.deepEqual(rt.ledger(), before, 'a refused batch copies nothing');
    await assert.rejects(rt.copyTo([live, {} as never], 'device'), ArgumentError);
    await assert.rejects(rt.copyTo('nope' as never, 'device'), ArgumentError);
    await assert.rejects(rt.copyTo([live], 'no_such_memory'), ArgumentError);
    const other = await Runtime.create();
    const foreign = await other.upload(x4());
    await assert.rejects(rt.copyTo([live, foreign], 'device'), ArgumentError);
    other.dispose();
    const [ok] = await rt.copyTo([live], 'device');
    assert.equal(ok!.memoryKind, 'device');
    ok!.dispose();
    live.dispose();
    await stillWorks();
  });

  test('EXPECTED FAILURE - use after client dispose', async () => {
    const other = await Runtime.create();
    const exe = await other.compile(ADD(4));
    const buf = await other.upload(x4());
    other.dispose();
    assert.equal(other.disposed, true);
    await assert.rejects(exe.run([buf, buf]), DisposedError);
    await assert.rejects(buf.toHost(), DisposedError);
    await assert.rejects(other.compile(ADD(4)), DisposedError);
    await stillWorks();
  });

  test('an abort releases the caller; the runtime stays usable', async () => {
    const ac = new AbortController();
    ac.abort();
    await assert.rejects(add.run([x4(), x4()], { signal: ac.signal }), { name: 'AbortError' });
    await stillWorks();
  });
});

suite('native boundary: objects posing as a PjrtBuffer', () => {
  test('EXPECTED FAILURE - execute and copyBuffers refuse look-alikes with a TypeError; the client serves on', async () => {
    const b = binding();
    const path = resolvePlugin('cpu');
    b.loadPlugin(path);
    const client = await b.createClient(path, []);
    const exe = await client.compile(ADD(4));
    const x = { data: new Float32Array([1, 2, 3, 4]), type: 11, dims: [4] };
    const real = await client.upload(x, 0, 0);
    const proto = Object.getPrototypeOf(real) as object;
    const lookAlike = Object.assign(Object.create(proto) as object, x);
    for (const fake of [Object.create(proto) as unknown, {}, null, 7]) {
      await assert.rejects(async () => exe.execute([fake as never, real], 0, true), TypeError);
      await assert.rejects(async () => client.copyBuffers([real, fake as never], 0), TypeError);
    }
    await assert.rejects(async () => client.copyBuffers([real, lookAlike as never], 0), TypeError);
    // To execute, a look-alike with data, type and dims is host data like any such object.
    const [viaHost] = await exe.execute([lookAlike as never, real], 0, true);
    assert.deepEqual([...new Float32Array(viaHost!.data.buffer, viaHost!.data.byteOffset, 4)], [2, 4, 6, 8]);
    const [out] = await exe.execute([real, real], 0, true);
    assert.deepEqual([...new Float32Array(out!.data.buffer, out!.data.byteOffset, 4)], [2, 4, 6, 8]);
    real.dispose();
    exe.dispose();
    client.dispose();
  });
});
