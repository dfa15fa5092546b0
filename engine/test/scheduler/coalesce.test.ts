import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import {
  CoalesceKeyMemo,
  coalesceInputs,
  coalesceKey,
  requestRows,
  sliceOutputs,
} from '../../src/scheduler/coalesce.js';
import { ServeError } from '@hloserve/common/errors';
import type { HostTensor } from '../../src/tensor.js';

const u8 = (name: string, shape: number[], bytes: number[]): HostTensor => ({
  name,
  dtype: 'u8',
  shape,
  data: Uint8Array.from(bytes),
});
const i16 = (name: string, shape: number[], vals: number[]): HostTensor => ({
  name,
  dtype: 'i16',
  shape,
  data: new Uint8Array(Int16Array.from(vals).buffer),
});
const bytes = (t: HostTensor): number[] => [...t.data];

suite('coalesceInputs, batch axis 0', () => {
  test('concatenates rows contiguously and zero-pads the tail to the compiled size', () => {
    const a = [u8('x', [1, 3], [1, 2, 3])];
    const b = [u8('x', [2, 3], [4, 5, 6, 7, 8, 9])];
    const [x] = coalesceInputs([a, b], [0], 4);
    assert.deepEqual(x!.shape, [4, 3]);
    assert.deepEqual(bytes(x!), [1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 0, 0]);
    assert.equal(x!.name, 'x');
  });

  test('multi-byte elements are copied as bytes, never reinterpreted', () => {
    const [x] = coalesceInputs([[i16('v', [1, 2], [-1, 300])], [i16('v', [1, 2], [7, -32768])]], [0], 2);
    assert.deepEqual([...new Int16Array(x!.data.buffer, x!.data.byteOffset, 4)], [-1, 300, 7, -32768]);
  });

  test('a lone request filling the compiled size passes through untouched (no copy)', () => {
    const a = [u8('x', [2, 1], [1, 2])];
    const out = coalesceInputs([a], [0], 2);
    assert.equal(out[0], a[0]);
  });

  test('the any-batch module (size 0) concatenates without padding', () => {
    const [x] = coalesceInputs([[u8('x', [1, 1], [1])], [u8('x', [2, 1], [2, 3])]], [0], 0);
    assert.deepEqual(x!.shape, [3, 1]);
    assert.deepEqual(bytes(x!), [1, 2, 3]);
  });

  test('unbatched inputs come from the first request', () => {
    const t1 = u8('t', [1], [42]);
    const out = coalesceInputs(
      [
        [u8('x', [1], [1]), t1],
        [u8('x', [1], [2]), u8('t', [1], [99])],
      ],
      [0, null],
      2,
    );
    assert.equal(out[1], t1);
    assert.deepEqual(bytes(out[0]!), [1, 2]);
  });

  test('refuses mismatched extents, byte lengths and BYTES tensors', () => {
    assert.throws(() => coalesceInputs([[u8('x', [1, 2], [1, 2])], [u8('x', [1, 3], [1, 2, 3])]], [0], 2), ServeError);
    assert.throws(() => coalesceInputs([[u8('x', [1, 2], [1])], [u8('x', [1, 2], [1, 2])]], [0], 2), ServeError);
    const s: HostTensor = { name: 's', dtype: 'BYTES', shape: [1], data: Uint8Array.from([1, 0, 0, 0, 65]) };
    assert.throws(() => coalesceInputs([[s], [s]], [0], 2), ServeError);
    assert.throws(
      () => coalesceInputs([[u8('x', [3], [1, 2, 3])], [u8('x', [2], [1, 2])]], [0], 4),
      /planned into compiled size/,
    );
  });
});

suite('coalesceInputs, non-leading batch axis (strided)', () => {
  test('concatenates along axis 1 of a [C, N] tensor and pads each outer slice', () => {
    // request a: C=2, N=1 -> [[1],[2]]; request b: C=2, N=2 -> [[3,4],[5,6]]
    const a = [u8('x', [2, 1], [1, 2])];
    const b = [u8('x', [2, 2], [3, 4, 5, 6])];
    const [x] = coalesceInputs([a, b], [1], 4);
    assert.deepEqual(x!.shape, [2, 4]);
    assert.deepEqual(bytes(x!), [1, 3, 4, 0, 2, 5, 6, 0]);
  });

  test('middle axis of a rank-3 tensor', () => {
    // [2 outer, N, 2 inner]
    const a = [u8('x', [2, 1, 2], [1, 2, 3, 4])];
    const b = [u8('x', [2, 1, 2], [5, 6, 7, 8])];
    const [x] = coalesceInputs([a, b], [1], 3);
    assert.deepEqual(x!.shape, [2, 3, 2]);
    assert.deepEqual(bytes(x!), [1, 2, 5, 6, 0, 0, 3, 4, 7, 8, 0, 0]);
  });
});

suite('sliceOutputs', () => {
  test('axis 0: per-request views into one buffer, padding dropped', () => {
    const out = u8('y', [4, 2], [1, 2, 3, 4, 5, 6, 0, 0]);
    const [r0, r1] = sliceOutputs([out], [0], [1, 2]);
    assert.deepEqual(r0![0]!.shape, [1, 2]);
    assert.deepEqual(bytes(r0![0]!), [1, 2]);
    assert.deepEqual(r1![0]!.shape, [2, 2]);
    assert.deepEqual(bytes(r1![0]!), [3, 4, 5, 6]);
    assert.equal(r1![0]!.data.buffer, out.data.buffer, 'a view, not a copy');
  });

  test('non-leading axis: strided copies', () => {
    // [C=2, B=4]: rows per request 1 and 2
    const out = u8('y', [2, 4], [1, 3, 4, 0, 2, 5, 6, 0]);
    const [r0, r1] = sliceOutputs([out], [1], [1, 2]);
    assert.deepEqual(r0![0]!.shape, [2, 1]);
    assert.deepEqual(bytes(r0![0]!), [1, 2]);
    assert.deepEqual(r1![0]!.shape, [2, 2]);
    assert.deepEqual(bytes(r1![0]!), [3, 4, 5, 6]);
  });

  test('round trip: coalesce then slice gives every request its own rows back', () => {
    const reqs = [
      [u8('x', [2, 3, 1], [1, 2, 3, 4, 5, 6])],
      [u8('x', [2, 1, 1], [7, 8])],
      [u8('x', [2, 2, 1], [9, 10, 11, 12])],
    ];
    const [x] = coalesceInputs(reqs, [1], 8);
    const back = sliceOutputs([x!], [1], [3, 1, 2]);
    back.forEach((r, i) => assert.deepEqual(bytes(r[0]!), bytes(reqs[i]![0]!)));
  });

  test('requests of different rows in one batch each get their own shape; unbatched outputs keep theirs', () => {
    const out = u8('y', [6, 1], [1, 2, 3, 4, 5, 0]);
    const stat = u8('s', [2], [7, 8]);
    const res = sliceOutputs([out, stat], [0, null], [1, 1, 2, 1]);
    assert.deepEqual(
      res.map((r) => r[0]!.shape),
      [
        [1, 1],
        [1, 1],
        [2, 1],
        [1, 1],
      ],
    );
    assert.deepEqual(
      res.map((r) => bytes(r[0]!)),
      [[1], [2], [3, 4], [5]],
    );
    for (const r of res) assert.equal(r[1], stat);
    assert.deepEqual(out.shape, [6, 1], 'the executor output is left as it was');
  });

  test('a lone request whose rows equal the output extent gets the outputs as they are', () => {
    const out = u8('y', [2], [1, 2]);
    assert.equal(sliceOutputs([out], [0], [2])[0]![0], out);
  });

  test('unbatched outputs are shared by every request', () => {
    const stat = u8('s', [1], [9]);
    const res = sliceOutputs([u8('y', [2], [1, 2]), stat], [0, null], [1, 1]);
    assert.equal(res[0]![1], stat);
    assert.equal(res[1]![1], stat);
  });

  test('an output too short for the batch is a runtime error', () => {
    assert.throws(
      () => sliceOutputs([u8('y', [1], [1])], [0], [1, 1]),
      (e: unknown) => e instanceof ServeError && e.code === 'HLO_ERR_RUNTIME',
    );
    assert.throws(
      () => sliceOutputs([], [0], [1]),
      (e: unknown) => e instanceof ServeError && e.code === 'HLO_ERR_RUNTIME',
    );
  });
});

suite('request rows and coalescing keys', () => {
  test('rows come from the first batched input; all batched inputs must agree', () => {
    assert.equal(requestRows([u8('a', [3, 1], [1, 2, 3]), u8('b', [1, 3], [1, 2, 3])], [0, 1]), 3);
    assert.equal(requestRows([u8('a', [3], [1, 2, 3])], [null]), 1);
    assert.throws(() => requestRows([u8('a', [3], [1, 2, 3]), u8('b', [2], [1, 2])], [0, 0]), /batch extent/);
    assert.throws(() => requestRows([u8('a', [3], [1, 2, 3])], [0, 0]), /expected 2 inputs/);
    assert.throws(() => requestRows([u8('a', [3], [1, 2, 3])], [1]), /outside its rank/);
  });

  test('keys ignore the batch extent and see every other extent and dtype', () => {
    const k = (t: HostTensor) => coalesceKey([t], [0]);
    assert.equal(k(u8('x', [1, 3], [1, 2, 3])), k(u8('x', [5, 3], new Array(15).fill(0))));
    assert.notEqual(k(u8('x', [1, 3], [1, 2, 3])), k(u8('x', [1, 2], [1, 2])));
    assert.notEqual(k(u8('x', [1, 1], [1])), k(i16('x', [1, 1], [1])));
  });
});

suite('CoalesceKeyMemo', () => {
  test('answers what coalesceKey answers, as the shapes change and back', () => {
    const memo = new CoalesceKeyMemo();
    const axes = [0];
    const cases = [
      [u8('x', [1, 3], [1, 2, 3])],
      [u8('x', [2, 3], [1, 2, 3, 4, 5, 6])], // another batch extent: same key
      [u8('x', [1, 2], [1, 2])], // another row shape: another key
      [i16('x', [1, 2], [1, 2])], // another dtype
      [u8('x', [1, 2, 1], [1, 2])], // another rank
      [u8('x', [1, 3], [7, 8, 9])],
      [u8('x', [1, 3], [1, 2, 3]), u8('y', [1], [1])], // another input count
    ];
    for (const inputs of cases) assert.equal(memo.keyOf(inputs, axes), coalesceKey(inputs, axes));
    assert.equal(memo.keyOf(cases[0]!, axes), memo.keyOf(cases[1]!, axes));
    assert.notEqual(memo.keyOf(cases[0]!, axes), memo.keyOf(cases[2]!, axes));
  });

  test('new batch axes (a model replaced) are never answered from the old ones', () => {
    const memo = new CoalesceKeyMemo();
    const inputs = [u8('x', [2, 3], [1, 2, 3, 4, 5, 6])];
    assert.equal(memo.keyOf(inputs, [0]), coalesceKey(inputs, [0]));
    assert.equal(memo.keyOf(inputs, [1]), coalesceKey(inputs, [1]));
    assert.notEqual(coalesceKey(inputs, [0]), coalesceKey(inputs, [1]));
  });
});

suite('coalesceInputs into reused buffers', () => {
  test('every byte of a reused buffer is rewritten: rows, then zero padding, in both layouts', () => {
    const stale = () => Buffer.alloc(12, 0xee);
    const [x] = coalesceInputs([[u8('x', [1, 3], [1, 2, 3])], [u8('x', [1, 3], [4, 5, 6])]], [0], 4, stale);
    assert.deepEqual(bytes(x!), [1, 2, 3, 4, 5, 6, 0, 0, 0, 0, 0, 0]);
    // [C=2, N] batched on axis 1: each outer slice gets its rows, then its padding.
    const [y] = coalesceInputs([[u8('y', [2, 1], [1, 2])], [u8('y', [2, 2], [3, 4, 5, 6])]], [1], 6, stale);
    assert.deepEqual(bytes(y!), [1, 3, 4, 0, 0, 0, 2, 5, 6, 0, 0, 0]);
  });

  test('asks the allocator for exactly the batch bytes', () => {
    const asked: number[] = [];
    coalesceInputs([[i16('v', [1, 2], [1, 2])], [i16('v', [1, 2], [3, 4])]], [0], 4, (n) => {
      asked.push(n);
      return Buffer.alloc(n);
    });
    assert.deepEqual(asked, [16]);
  });
});
