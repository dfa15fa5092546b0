import assert from 'node:assert/strict';
import { after, before, suite, test } from 'node:test';
import { ArgumentError, DisposedError, hostArray, PjrtError, Runtime, type Executable } from '../lib/index.js';
import { MLP, randomF32 } from './programs.js';

const B = 4;
const I = 16;
const H = 32;
const O = 8;

function mlpArgs() {
  return [
    hostArray('f32', [B, I], randomF32(B * I, 1)),
    hostArray('f32', [I, H], randomF32(I * H, 2)),
    hostArray('f32', [H], randomF32(H, 3)),
    hostArray('f32', [H, O], randomF32(H * O, 4)),
    hostArray('f32', [O], randomF32(O, 5)),
  ];
}

suite('serialize and deserializeAndLoad', () => {
  let rt: Runtime;
  let compiled: Executable;
  let serialized: Uint8Array;
  before(async () => {
    rt = await Runtime.create();
    compiled = await rt.compile(MLP(B, I, H, O));
    serialized = await compiled.serialize();
  });
  after(() => rt.dispose());

  test('a round trip runs and gives byte-identical outputs', async () => {
    assert.ok(serialized.byteLength > 0);
    const loaded = await rt.deserializeAndLoad(serialized, { signature: compiled.signature! });
    try {
      assert.deepEqual(loaded.outputs, compiled.outputs);
      const [a] = await compiled.run(mlpArgs());
      const [b] = await loaded.run(mlpArgs());
      assert.deepEqual(b!.shape, [B, O]);
      assert.ok(Buffer.from(a!.data).equals(Buffer.from(b!.data)));
      // The loaded executable serializes again, and counts in the client's ledger like a compiled one.
      assert.ok((await loaded.serialize()).byteLength > 0);
    } finally {
      loaded.dispose();
    }
  });

  test('the ledger counts a loaded executable and forgets it on dispose', async () => {
    const before = rt.ledger().liveExecutables;
    const loaded = await rt.deserializeAndLoad(serialized);
    assert.equal(rt.ledger().liveExecutables, before + 1);
    loaded.dispose();
    assert.equal(rt.ledger().liveExecutables, before);
  });

  test('EXPECTED FAILURE - garbage bytes are a PjrtError and the runtime keeps working', async () => {
    const garbage = [
      new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]),
      Buffer.from('definitely not an executable'),
      serialized.subarray(0, Math.floor(serialized.byteLength / 2)),
      serialized.subarray(0, 16),
    ];
    for (const g of garbage) {
      await assert.rejects(rt.deserializeAndLoad(g), (e: unknown) => e instanceof PjrtError, `${g.byteLength} bytes`);
    }
    const [out] = await compiled.run(mlpArgs());
    assert.equal(out!.data.byteLength, B * O * 4);
  });

  test('BAD CALL - empty or non-byte input is an ArgumentError', async () => {
    await assert.rejects(rt.deserializeAndLoad(new Uint8Array(0)), ArgumentError);
    await assert.rejects(rt.deserializeAndLoad('text' as never), ArgumentError);
  });

  test('BAD CALL - serialize after dispose is a DisposedError', async () => {
    const e = await rt.deserializeAndLoad(serialized);
    e.dispose();
    await assert.rejects(e.serialize(), DisposedError);
  });

  test('dispose during serialize or deserializeAndLoad is safe: the work finishes on what it pinned', async () => {
    const e = await rt.deserializeAndLoad(serialized);
    const pending = e.serialize();
    e.dispose();
    assert.ok((await pending).byteLength > 0);

    const other = await Runtime.create();
    const loading = other.deserializeAndLoad(serialized);
    other.dispose();
    // Either outcome is fine (the client may close first); neither may crash or leak.
    const r = await loading.then(
      (x) => x,
      (err: unknown) => err,
    );
    assert.ok(r instanceof DisposedError || r instanceof PjrtError || 'run' in (r as object));
  });

  test('the compile identity names plugin, API, options and device kind', () => {
    const id = rt.compileIdentity;
    assert.equal(id.pluginPath, rt.plugin.path);
    assert.equal(id.apiVersion.length, 2);
    assert.match(id.compileOptions, /^[0-9a-f]+$/);
    assert.ok(id.deviceKind.length > 0);
  });
});
