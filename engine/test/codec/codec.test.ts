import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { suite, test } from 'node:test';
import { countBytesElements, encodeBytesElements } from '../../src/codec/bytes-tensor.js';
import { decodeRequest, readSharedInputs } from '../../src/codec/decode.js';
import { encodeOutputs, writeSharedOutputs } from '../../src/codec/encode.js';
import type { ModelIO } from '../../src/codec/model-io.js';
import { bytesToTyped, typedToBytes } from '../../src/codec/typed-values.js';
import type { WireInferRequest, WireInput } from '@hloserve/common/wire';
import { ServeError } from '@hloserve/common/errors';
import { SharedMemoryRegistry } from '../../src/transports/shared-memory.js';

const invalid = (re: RegExp) => (e: unknown) =>
  e instanceof ServeError && e.code === 'HLO_ERR_INVALID_ARGUMENT' && re.test(e.message);

suite('typed values and BYTES', () => {
  test('round trips for every fixed-size dtype', () => {
    const cases: [Parameters<typeof typedToBytes>[0], unknown[]][] = [
      ['bool', [true, false, true]],
      ['i8', [-128, 0, 127]],
      ['u8', [0, 255]],
      ['i16', [-32768, 32767]],
      ['u16', [0, 65535]],
      ['i32', [-(2 ** 31), 2 ** 31 - 1]],
      ['u32', [0, 2 ** 32 - 1]],
      ['i64', [-(2 ** 53 - 1), 2 ** 53 - 1, '-9223372036854775808']],
      ['u64', [0, '18446744073709551615']],
      ['f32', [1.5, -2.25, 0]],
      ['f64', [Math.PI, -1e300]],
    ];
    for (const [dtype, values] of cases) {
      const back = bytesToTyped(dtype, typedToBytes(dtype, values, 'data'));
      assert.deepEqual(
        back,
        values.map((v) =>
          typeof v === 'string' && BigInt(v) >= -(2n ** 53n) && BigInt(v) <= 2n ** 53n ? Number(v) : v,
        ),
        dtype,
      );
    }
  });

  test('BAD CALL - out-of-range, non-integer and wrongly typed values are refused, naming the element', () => {
    assert.throws(() => typedToBytes('i8', [128], 'data'), invalid(/data\[0\]: 128 is not a valid i8 value/));
    assert.throws(() => typedToBytes('u8', [-1], 'data'), invalid(/data\[0\]/));
    assert.throws(() => typedToBytes('i32', [1.5], 'data'), invalid(/i32/));
    assert.throws(() => typedToBytes('u64', [-1], 'x'), invalid(/x\[0\]/));
    assert.throws(() => typedToBytes('f32', ['1'], 'data'), invalid(/f32/));
    assert.throws(() => typedToBytes('bool', [2], 'data'), invalid(/BOOL/));
    assert.throws(() => typedToBytes('f16', [1], 'data'), invalid(/FP16 has no typed form/));
  });

  test('BYTES: the KServe length-prefixed encoding, and truncation is refused', () => {
    const enc = encodeBytesElements(['a', 'bcd', ''], 'data');
    assert.deepEqual([...enc], [1, 0, 0, 0, 0x61, 3, 0, 0, 0, 0x62, 0x63, 0x64, 0, 0, 0, 0]);
    assert.equal(countBytesElements(enc, 'x'), 3);
    assert.deepEqual(bytesToTyped('BYTES', enc), ['a', 'bcd', '']);
    assert.throws(() => countBytesElements(enc.subarray(0, 10), 'x'), invalid(/past the end/));
    assert.throws(() => countBytesElements(Uint8Array.of(1, 0), 'x'), invalid(/truncated length prefix/));
  });
});

suite('decodeRequest', () => {
  const io: ModelIO = {
    name: 'm',
    inputs: [
      { name: 'a', dtype: 'f32', dims: [-1, 3], batchAxis: 0 },
      { name: 'b', dtype: 'i32', dims: [-1, 2], batchAxis: 0 },
    ],
    outputs: [{ name: 'y', dtype: 'f32', dims: [-1, 1], batchAxis: 0 }],
    maxRows: 8,
  };
  const raw = (n: number) => ({ kind: 'raw' as const, bytes: new Uint8Array(n) });
  const input = (over: Partial<WireInput> = {}): WireInput => ({
    name: 'a',
    datatype: 'FP32',
    shape: [2, 3],
    parameters: {},
    data: raw(24),
    ...over,
  });
  const req = (inputs: WireInput[], over: Partial<WireInferRequest> = {}): WireInferRequest => ({
    modelName: 'm',
    modelVersion: '',
    id: 'x',
    parameters: {},
    inputs,
    outputs: [],
    ...over,
  });
  const b = (rows = 2) =>
    input({
      name: 'b',
      datatype: 'INT32',
      shape: [rows, 2],
      data: { kind: 'typed', values: Array(rows * 2).fill(7), field: 'contents.int_contents' },
    });

  test('requested outputs: each request gets its own selection, the shared record only without parameters', () => {
    const two: ModelIO = {
      ...io,
      outputs: [
        { name: 'y', dtype: 'f32', dims: [-1, 1], batchAxis: 0 },
        { name: 'z', dtype: 'f32', dims: [-1, 2], batchAxis: 0 },
      ],
    };
    const first = decodeRequest(two, req([input(), b()], { outputs: [{ name: 'z', parameters: {} }] }), null);
    const second = decodeRequest(
      two,
      req([input(), b()], {
        outputs: [
          { name: 'y', parameters: { binary_data: true } },
          { name: 'z', parameters: {} },
        ],
      }),
      null,
    );
    const third = decodeRequest(two, req([input(), b()], { outputs: [{ name: 'y', parameters: {} }] }), null);
    const seen = (d: typeof first) => d.outputs.map((o) => [o.index, o.spec.name, { ...o.parameters }, o.shm]);
    assert.deepEqual(seen(first), [[1, 'z', {}, null]]);
    assert.deepEqual(seen(second), [
      [0, 'y', { binary_data: true }, null],
      [1, 'z', {}, null],
    ]);
    assert.deepEqual(seen(third), [[0, 'y', {}, null]]);
    // The shared record is frozen: a later request cannot see what an earlier one wrote.
    assert.ok(Object.isFrozen(third.outputs[0]) && Object.isFrozen(third.outputs[0]!.parameters));
    assert.throws(
      () =>
        decodeRequest(
          two,
          req([input(), b()], {
            outputs: [
              { name: 'z', parameters: {} },
              { name: 'z', parameters: {} },
            ],
          }),
          null,
        ),
      invalid(/outputs\[1\] 'z' requested twice/),
    );
  });

  test('inputs come back in the model order with their rows; typed contents are converted', () => {
    const d = decodeRequest(io, req([b(), input()]), null);
    assert.deepEqual(
      d.inputs.map((t) => t.name),
      ['a', 'b'],
    );
    assert.equal(d.rows, 2);
    assert.deepEqual([...new Int32Array(d.inputs[1]!.data.slice().buffer)], [7, 7, 7, 7]);
    assert.deepEqual(
      d.outputs.map((o) => o.spec.name),
      ['y'],
    );
  });

  test('BAD CALL - each malformed request names what is wrong', () => {
    assert.throws(() => decodeRequest(io, req([input()]), null), invalid(/missing inference input.*b/));
    assert.throws(
      () => decodeRequest(io, req([input(), b(), input({ name: 'c' })]), null),
      invalid(/unexpected inference input 'c'/),
    );
    assert.throws(() => decodeRequest(io, req([input(), input(), b()]), null), invalid(/given twice/));
    // Errors name the request's position and the input, whichever order the inputs come in.
    assert.throws(
      () => decodeRequest(io, req([input(), input(), b()]), null),
      invalid(/^inputs\[1\] 'a': input given twice/),
    );
    assert.throws(
      () => decodeRequest(io, req([b(), input({ datatype: 'FP64' })]), null),
      invalid(/^inputs\[1\] 'a': datatype/),
    );
    assert.throws(
      () => decodeRequest(io, req([input({ datatype: 'FP64' }), b()]), null),
      invalid(/^inputs\[0\] 'a': datatype/),
    );
    assert.throws(() => decodeRequest(io, req([b(), b()]), null), invalid(/^inputs\[1\] 'b': input given twice/));
    assert.throws(
      () => decodeRequest(io, req([input({ datatype: 'FP64' }), b()]), null),
      invalid(/does not match the model's FP32/),
    );
    assert.throws(() => decodeRequest(io, req([input({ shape: [2, 4] }), b()]), null), invalid(/at axis 1/));
    assert.throws(() => decodeRequest(io, req([input({ shape: [2] }), b()]), null), invalid(/rank 1/));
    assert.throws(() => decodeRequest(io, req([input({ data: raw(20) }), b()]), null), invalid(/expected 24 bytes/));
    assert.throws(() => decodeRequest(io, req([input(), b(3)]), null), invalid(/disagrees/));
    assert.throws(
      () => decodeRequest(io, req([input({ shape: [9, 3], data: raw(108) }), b(9)]), null),
      invalid(/exceeds the largest batch/),
    );
    assert.throws(
      () => decodeRequest(io, req([input({ shape: [0, 3], data: raw(0) }), b(0)]), null),
      invalid(/at least one row/),
    );
    assert.throws(() => decodeRequest(io, req([input({ data: { kind: 'none' } }), b()]), null), invalid(/no data/));
    assert.throws(
      () => decodeRequest(io, req([input(), b()], { outputs: [{ name: 'z', parameters: {} }] }), null),
      invalid(/unexpected inference output 'z'/),
    );
    assert.throws(
      () => decodeRequest(io, req([input({ parameters: { shared_memory_byte_size: 24 } }), b()]), null),
      invalid(/without shared_memory_region/),
    );
    assert.throws(
      () =>
        decodeRequest(
          io,
          req([
            input({ parameters: { shared_memory_region: 'r', shared_memory_byte_size: 24 }, data: { kind: 'none' } }),
            b(),
          ]),
          null,
        ),
      invalid(/shared memory is disabled/),
    );
  });

  test('shared memory: inputs are read from the region, outputs written into it', async (t) => {
    const root = mkdtempSync(join(tmpdir(), 'hlo-codec-shm-'));
    t.after(() => rmSync(root, { recursive: true, force: true }));
    writeFileSync(join(root, 'obj'), Buffer.alloc(64));
    const shm = new SharedMemoryRegistry(root);
    shm.register('r', '/obj', 0, 64);
    const a = Buffer.from(new Float32Array([1, 2, 3, 4, 5, 6]).buffer);
    writeFileSync(join(root, 'obj'), Buffer.concat([a, Buffer.alloc(40)]));
    const d = decodeRequest(
      io,
      req(
        [
          input({ parameters: { shared_memory_region: 'r', shared_memory_byte_size: 24 }, data: { kind: 'none' } }),
          b(),
        ],
        {
          outputs: [
            {
              name: 'y',
              parameters: { shared_memory_region: 'r', shared_memory_byte_size: 8, shared_memory_offset: 32 },
            },
          ],
        },
      ),
      shm,
    );
    assert.deepEqual(
      d.sharedInputs.map((s) => s.index),
      [0],
    );
    assert.equal(d.inputs[0]!.data.byteLength, 0);
    await readSharedInputs(io, d, shm);
    assert.deepEqual([...new Float32Array(Uint8Array.from(d.inputs[0]!.data).buffer)], [1, 2, 3, 4, 5, 6]);
    const y = {
      name: 'y',
      dtype: 'f32' as const,
      shape: [2, 1],
      data: new Uint8Array(new Float32Array([9, 8]).buffer),
    };
    const out = encodeOutputs(d.outputs, [y], shm);
    await writeSharedOutputs(d.outputs, [y], shm);
    assert.equal(out[0]!.data, null);
    assert.deepEqual(out[0]!.parameters, {
      shared_memory_region: 'r',
      shared_memory_byte_size: 8,
      shared_memory_offset: 32,
    });
    assert.deepEqual(
      [...new Float32Array(Uint8Array.from(readFileSync(join(root, 'obj')).subarray(32, 40)).buffer)],
      [9, 8],
    );
    shm.close();
  });
});
