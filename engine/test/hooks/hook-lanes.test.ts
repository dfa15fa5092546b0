import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { LaneBlock, readLane, writeHostLane, writeLane, type LaneCall } from '../../src/hooks/hook-lanes.js';
import type { HookTensors } from '../../src/hooks/hook-tensor.js';

suite('hook lanes', () => {
  const block = new LaneBlock({ lanes: 2, laneBytes: 4096 });

  test('a header and tensors of every numeric kind read back as written, each in a buffer of its own', () => {
    const odd = new Float32Array(new ArrayBuffer(64), 4, 3).fill(1.5);
    const tensors: HookTensors = {
      é名: { dtype: 'f32', shape: [1, 3], data: odd },
      big: { dtype: 'i64', shape: [2], data: new BigInt64Array([-(2n ** 62n), 7n]) },
      half: { dtype: 'f16', shape: [], data: new Uint16Array([0x3c00]) },
      flag: { dtype: 'bool', shape: [3], data: new Uint8Array([1, 0, 1]) },
      none: { dtype: 'f64', shape: [0, 4], data: new Float64Array(0) },
    };
    const header: LaneCall = {
      id: 7,
      module: 3,
      url: 'file:///x.mjs',
      fn: 'postprocess',
      context: { model: 'm', requestId: 'ü', parameters: { k: 1, s: 'ß' }, deadline: 1234.5 },
    };
    assert.equal(writeLane(block.lane(0), header, tensors), true);
    const { header: h, tensors: back } = readLane(block.lane(0));
    assert.deepEqual(h, header);
    // A thread that has the module loaded skips its URL; no parameters and no deadline read back as such.
    const bare: LaneCall = {
      ...header,
      fn: 'preprocess',
      context: { model: 'm', requestId: '', parameters: {}, deadline: null },
    };
    assert.equal(writeLane(block.lane(1), bare, {}), true);
    assert.deepEqual(readLane(block.lane(1), (m) => m === 3).header, { ...bare, url: null });
    assert.deepEqual(Object.keys(back), Object.keys(tensors));
    for (const [name, t] of Object.entries(tensors)) {
      const b = back[name]!;
      assert.equal(b.dtype, t.dtype);
      assert.deepEqual(b.shape, t.shape);
      assert.equal(b.data.constructor, t.data.constructor);
      assert.deepEqual([...(b.data as Float32Array)], [...(t.data as Float32Array)]);
      const d = b.data as Float32Array;
      assert.ok(!(d.buffer instanceof SharedArrayBuffer) && d.byteOffset === 0 && d.byteLength === d.buffer.byteLength);
    }
  });

  test('what a lane cannot carry is refused, for the caller to send by message', () => {
    const lane = block.lane(1);
    const f32 = (n: number) => ({ dtype: 'f32', shape: [n], data: new Float32Array(n) });
    assert.equal(writeLane(lane, null, { b: { dtype: 'BYTES', shape: [1], data: [new Uint8Array(1)] } }), false);
    assert.equal(writeLane(lane, null, { x: f32(2000) }), false, 'too large');
    assert.equal(writeLane(lane, null, { x: { dtype: 'f32', shape: [2], data: new Int32Array(2) } }), false);
    assert.equal(writeLane(lane, null, { x: { dtype: 'f32', shape: [0.5], data: new Float32Array(1) } }), false);
    assert.equal(writeLane(lane, null, { x: () => 1 }), false);
    assert.equal(writeLane(lane, null, [f32(1)]), false);
    assert.equal(writeLane(lane, null, { x: f32(1000) }), true, 'fits: 4000 bytes and its entry');
    assert.equal(readLane(lane).header, null);
  });

  test("the engine's own tensors are written from their bytes, unaligned ones too", () => {
    const wire = new Uint8Array(13);
    new DataView(wire.buffer).setFloat32(1, 2.5, true);
    new DataView(wire.buffer).setFloat32(5, -1, true);
    const x = { name: 'x', dtype: 'f32' as const, shape: [1, 2], data: wire.subarray(1, 9) };
    assert.equal(writeHostLane(block.lane(1), null, [x]), true);
    const back = readLane(block.lane(1)).tensors.x!;
    assert.deepEqual([...(back.data as Float32Array)], [2.5, -1]);
    assert.deepEqual(back.shape, [1, 2]);
    const bytes = { name: 'b', dtype: 'BYTES' as const, shape: [1], data: new Uint8Array(5) };
    assert.equal(writeHostLane(block.lane(1), null, [bytes]), false, 'BYTES go by message');
  });
});
