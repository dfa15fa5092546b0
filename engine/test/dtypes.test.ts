import { test, suite } from 'node:test';
import assert from 'node:assert/strict';
import { DTYPES } from '@hloserve/native/dtype';
import {
  elementByteSize,
  fixedElementByteSize,
  fromTritonDataType,
  fromWireDatatype,
  isTensorDType,
  parseDTypeToken,
  TENSOR_DTYPES,
  toTritonDataType,
  toTritonDataTypeName,
  toWireDatatype,
  TRITON_DATA_TYPE,
  WIRE_DATATYPES,
} from '../src/dtypes.js';

suite('dtypes', () => {
  test('wire names match the KServe V2 table', () => {
    const expected = {
      bool: 'BOOL',
      u8: 'UINT8',
      u16: 'UINT16',
      u32: 'UINT32',
      u64: 'UINT64',
      i8: 'INT8',
      i16: 'INT16',
      i32: 'INT32',
      i64: 'INT64',
      f16: 'FP16',
      f32: 'FP32',
      f64: 'FP64',
      bf16: 'BF16',
      BYTES: 'BYTES',
    } as const;
    for (const [dtype, wire] of Object.entries(expected)) {
      assert.equal(toWireDatatype(dtype as keyof typeof expected), wire);
      assert.equal(fromWireDatatype(wire), dtype);
    }
    assert.equal(WIRE_DATATYPES.length, TENSOR_DTYPES.length);
  });

  test('wire names are case-sensitive and unknown ones are undefined', () => {
    assert.equal(fromWireDatatype('fp32'), undefined);
    assert.equal(fromWireDatatype('FP8'), undefined);
    assert.equal(fromWireDatatype('STRING'), undefined);
  });

  test('Triton DataType numbers follow model_config.proto', () => {
    const expected: Record<string, number> = {
      bool: 1,
      u8: 2,
      u16: 3,
      u32: 4,
      u64: 5,
      i8: 6,
      i16: 7,
      i32: 8,
      i64: 9,
      f16: 10,
      f32: 11,
      f64: 12,
      BYTES: 13,
      bf16: 14,
    };
    for (const dtype of TENSOR_DTYPES) {
      assert.equal(toTritonDataType(dtype), expected[dtype], dtype);
      assert.equal(fromTritonDataType(expected[dtype]!), dtype);
    }
    assert.equal(toTritonDataTypeName('BYTES'), 'TYPE_STRING');
    assert.equal(toTritonDataTypeName('f32'), 'TYPE_FP32');
    assert.equal(TRITON_DATA_TYPE.TYPE_BF16, 14);
    assert.equal(fromTritonDataType(0), undefined);
    assert.equal(fromTritonDataType(15), undefined);
  });

  test('byte sizes', () => {
    const expected: Record<string, number> = {
      bool: 1,
      i8: 1,
      u8: 1,
      i16: 2,
      u16: 2,
      f16: 2,
      bf16: 2,
      i32: 4,
      u32: 4,
      f32: 4,
      i64: 8,
      u64: 8,
      f64: 8,
    };
    for (const d of DTYPES) assert.equal(elementByteSize(d), expected[d], d);
    assert.equal(fixedElementByteSize('BYTES'), null);
    assert.equal(fixedElementByteSize('f64'), 8);
  });

  test('isTensorDType', () => {
    assert.ok(isTensorDType('BYTES'));
    assert.ok(isTensorDType('bf16'));
    assert.ok(!isTensorDType('f8_e5m2'));
    assert.ok(!isTensorDType('FP32'));
    assert.ok(!isTensorDType(3));
  });

  suite('manifest tokens', () => {
    test('every executable dtype token parses in both roles', () => {
      for (const d of DTYPES) {
        assert.deepEqual(parseDTypeToken(d, 'executable'), { ok: true, dtype: d });
        assert.deepEqual(parseDTypeToken(d, 'client'), { ok: true, dtype: d });
      }
    });

    test('BYTES only on client tensors', () => {
      assert.deepEqual(parseDTypeToken('BYTES', 'client'), { ok: true, dtype: 'BYTES' });
      const r = parseDTypeToken('BYTES', 'executable');
      assert.ok(!r.ok && /only allowed on client_inputs/.test(r.error));
    });

    test('FP8 tokens are recognised and refused as unsupported', () => {
      for (const t of ['f8_e5m2', 'f8_e4m3']) {
        for (const role of ['executable', 'client'] as const) {
          const r = parseDTypeToken(t, role);
          assert.ok(!r.ok && r.error.includes(`dtype ${t} is not supported`), JSON.stringify(r));
        }
      }
    });

    test('a wire name gets a hint; junk gets the list', () => {
      const r = parseDTypeToken('FP32', 'executable');
      assert.ok(!r.ok && r.error.includes('did you mean "f32"'), JSON.stringify(r));
      const j = parseDTypeToken('float', 'executable');
      assert.ok(!j.ok && j.error.includes('unknown dtype "float"') && j.error.includes('bf16'));
      const n = parseDTypeToken(32, 'executable');
      assert.ok(!n.ok && n.error.includes('got 32'));
      const u = parseDTypeToken(undefined, 'executable');
      assert.ok(!u.ok && u.error.includes('got nothing'));
    });
  });
});
