import assert from 'node:assert/strict';
import { after, before, suite, test } from 'node:test';
import { type DType, Runtime } from '../lib/index.js';
import { IDENTITY } from './programs.js';

const MLIR_ELEMENT: Record<string, string> = {
  f32: 'f32',
  f16: 'f16',
  bf16: 'bf16',
  i8: 'i8',
  i32: 'i32',
  i64: 'i64',
  u8: 'ui8',
  bool: 'i1',
};

// Bit patterns chosen to include signs, extremes and non-trivial mantissas.
function sample(dtype: DType, n: number): Uint8Array {
  const bytes = new Uint8Array(
    n * ({ f32: 4, f16: 2, bf16: 2, i8: 1, i32: 4, i64: 8, u8: 1, bool: 1 } as Record<string, number>)[dtype]!,
  );
  if (dtype === 'bool') {
    for (let i = 0; i < n; i++) bytes[i] = i % 3 === 0 ? 1 : 0;
    return bytes;
  }
  if (dtype === 'f16' || dtype === 'bf16') {
    const v = new Uint16Array(bytes.buffer);
    // finite, non-NaN patterns (exponent not all ones)
    for (let i = 0; i < n; i++) v[i] = ((i * 2654435761) & 0x7bff) | (i % 2 ? 0x8000 : 0);
    return bytes;
  }
  if (dtype === 'f32') {
    const v = new Float32Array(bytes.buffer);
    for (let i = 0; i < n; i++) v[i] = (i - n / 2) * 1.2345e-3 + (i % 7 === 0 ? 3.4e38 : 0);
    return bytes;
  }
  for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 37 + 11) & 0xff;
  return bytes;
}

suite('dtypes round-trip through upload and download', () => {
  let rt: Runtime;
  before(async () => {
    rt = await Runtime.create();
  });
  after(() => rt.dispose());

  for (const dtype of ['f32', 'f16', 'bf16', 'i8', 'i32', 'i64', 'u8', 'bool'] as DType[]) {
    test(`${dtype}: upload -> toHost and identity execute keep every bit`, async () => {
      const n = 37;
      const data = sample(dtype, n);
      const buf = await rt.upload({ dtype, shape: [n], data });
      assert.equal(buf.dtype, dtype);
      assert.deepEqual(buf.shape, [n]);
      const back = await buf.toHost();
      assert.deepEqual(Buffer.from(back.data), Buffer.from(data));
      const exe = await rt.compile(IDENTITY(String(n), MLIR_ELEMENT[dtype]!));
      const [out] = await exe.run([buf]);
      assert.equal(out!.dtype, dtype);
      assert.deepEqual(Buffer.from(out!.data), Buffer.from(data));
      const into = new Uint8Array(data.length);
      await buf.toHost(into);
      assert.deepEqual(Buffer.from(into), Buffer.from(data));
      buf.dispose();
      exe.dispose();
    });
  }

  test('zero-sized and scalar arrays', async () => {
    const empty = await rt.upload({ dtype: 'f32', shape: [0, 3], data: new Uint8Array(0) });
    assert.equal((await empty.toHost()).data.byteLength, 0);
    const scalar = await rt.upload({ dtype: 'i32', shape: [], data: new Uint8Array(new Int32Array([-7]).buffer) });
    const h = await scalar.toHost();
    assert.equal(new Int32Array(h.data.buffer, h.data.byteOffset, 1)[0], -7);
  });
});
