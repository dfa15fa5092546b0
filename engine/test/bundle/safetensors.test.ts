import { test, suite, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ServeError } from '@hloserve/common/errors';
import {
  parseSafetensors,
  readArgumentOrder,
  readSafetensors,
  readSafetensorsHeader,
  MAX_HEADER_BYTES,
} from '../../src/bundle/safetensors.js';
import { encodeSafetensors, writeSafetensors, ALIGNMENT } from '../../src/bundle/safetensors-writer.js';
import { dtypeFromSafetensors, safetensorsDtypeOf } from '../../src/bundle/safetensors-dtype.js';
import { f32, removeDir, tempDir, tensor } from './fixtures.js';

const FILE = 'm/weights.safetensors';

/** A file from a hand-written header and a data section of `dataBytes` bytes. */
function rawFile(header: unknown, dataBytes: number, headerLength?: number): Uint8Array {
  const json = new TextEncoder().encode(typeof header === 'string' ? header : JSON.stringify(header));
  const out = new Uint8Array(8 + json.byteLength + dataBytes);
  new DataView(out.buffer).setBigUint64(0, BigInt(headerLength ?? json.byteLength), true);
  out.set(json, 8);
  return out;
}

function invalid(bytes: Uint8Array, field: string | null, pattern: RegExp): void {
  assert.throws(
    () => parseSafetensors(bytes, FILE),
    (err: unknown) => {
      assert.ok(err instanceof ServeError && err.code === 'HLO_ERR_BUNDLE_INVALID', String(err));
      const prefix = field === null ? `${FILE}: ` : `${FILE}: ${field}: `;
      assert.ok(
        err.message.startsWith(prefix),
        `expected prefix ${JSON.stringify(prefix)} in ${JSON.stringify(err.message)}`,
      );
      assert.match(err.message, pattern);
      return true;
    },
  );
}

const T = (dtype: string, shape: number[], offsets: number[]): unknown => ({ dtype, shape, data_offsets: offsets });

suite('safetensors: writer and reader', () => {
  let dir = '';
  before(async () => {
    dir = await tempDir('hloserve-st-');
  });
  after(async () => removeDir(dir));

  const tensors = [
    tensor('flag', 'bool', [3], new Uint8Array([1, 0, 1])),
    tensor('w', 'f32', [2, 3], f32([2, 3])),
    tensor('h', 'f16', [5]),
    tensor('big', 'i64', [2], new BigInt64Array([1n, -2n])),
    tensor('b', 'bf16', [1]),
    tensor('empty', 'f32', [0, 4]),
  ];

  test('round trip: data, shapes, dtypes, metadata', () => {
    const bytes = encodeSafetensors(tensors, { metadata: { note: 'x' }, argumentOrder: ['w', 'big'] });
    const file = parseSafetensors(bytes, FILE);
    assert.deepEqual(file.metadata, { note: 'x', argument_order: '["w","big"]' });
    assert.deepEqual(readArgumentOrder(file), ['w', 'big']);
    for (const t of tensors) {
      const got = file.tensor(t.name)!;
      assert.equal(got.dtype, t.dtype);
      assert.deepEqual(got.shape, t.shape);
      assert.deepEqual([...got.data], [...new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength)]);
    }
    assert.equal(file.tensors.length, tensors.length);
    assert.equal(file.tensor('nope'), undefined);
  });

  test('aligned: data section on an 8-byte boundary, each tensor on its element size', () => {
    const file = parseSafetensors(encodeSafetensors(tensors), FILE);
    assert.equal(file.dataOffset % ALIGNMENT, 0);
    const sizes: Record<string, number> = { bool: 1, f32: 4, f16: 2, i64: 8, bf16: 2 };
    for (const t of file.tensors) assert.equal(t.byteOffset % sizes[t.dtype]!, 0, t.name);
  });

  test('contiguous data section, as the official readers require', () => {
    const file = parseSafetensors(encodeSafetensors(tensors), FILE);
    let at = file.dataOffset;
    for (const t of file.entries) {
      assert.equal(t.byteOffset, at, t.name);
      at += t.byteLength;
    }
    assert.equal(at, file.fileSize);
  });

  test('tensors are zero-copy views of one buffer', async () => {
    const path = join(dir, 'zc.safetensors');
    await writeSafetensors(path, tensors);
    const file = await readSafetensors(path);
    assert.equal(file.buffer.byteOffset, 0);
    for (const t of file.tensors) {
      assert.equal(t.data.buffer, file.buffer.buffer);
      assert.equal(t.data.byteOffset, t.byteOffset);
    }
    const w = file.tensor('w')!;
    assert.deepEqual([...new Float32Array(w.data.buffer, w.data.byteOffset, 6)], [...f32([2, 3])]);
  });

  test('header-only read matches the full read', async () => {
    const path = join(dir, 'h.safetensors');
    await writeSafetensors(path, tensors, { argumentOrder: ['w'] });
    const header = await readSafetensorsHeader(path);
    const full = await readSafetensors(path);
    assert.equal(header.fileSize, full.fileSize);
    assert.equal(header.dataOffset, full.dataOffset);
    assert.deepEqual(header.entries, full.entries);
    assert.deepEqual(header.metadata, full.metadata);
  });

  test('numeric-looking names keep data order', () => {
    const file = parseSafetensors(encodeSafetensors([tensor('10', 'f32', [1]), tensor('2', 'f32', [1])]), FILE);
    assert.deepEqual(
      file.entries.map((e) => e.name),
      ['10', '2'],
    );
  });

  test('writer refuses bad input', () => {
    assert.throws(() => encodeSafetensors([tensor('a', 'f32', [2], new Uint8Array(4))]), /needs 8/);
    assert.throws(() => encodeSafetensors([tensor('a', 'f32', [1]), tensor('a', 'f32', [1])]), /duplicate/);
    assert.throws(() => encodeSafetensors([tensor('__metadata__', 'f32', [1])]), /reserved/);
  });

  test('files that cannot be opened name the file', async () => {
    await assert.rejects(readSafetensorsHeader(join(dir, 'missing.safetensors')), /missing\.safetensors: cannot open/);
    await assert.rejects(readSafetensors(join(dir, 'missing.safetensors')), /missing\.safetensors: cannot read/);
  });

  test('a truncated file on disk is caught by the header-only read', async () => {
    const path = join(dir, 'trunc.safetensors');
    await writeFile(path, encodeSafetensors(tensors).subarray(0, 40));
    await assert.rejects(readSafetensorsHeader(path), /header length: \d+ is not a plausible JSON header length/);
  });

  test('dtype table', () => {
    assert.equal(dtypeFromSafetensors('BF16'), 'bf16');
    assert.equal(dtypeFromSafetensors('BOOL'), 'bool');
    assert.equal(dtypeFromSafetensors('F8_E4M3'), undefined);
    assert.equal(dtypeFromSafetensors('toString'), undefined);
    assert.equal(safetensorsDtypeOf('u64'), 'U64');
  });
});

suite('safetensors: validation', () => {
  test('too short', () => invalid(new Uint8Array(5), null, /5 bytes is too short/));
  test('header length beyond the file', () =>
    invalid(rawFile({}, 0, 1000), 'header length', /1000 is not a plausible/));
  test('header length beyond the cap', () =>
    invalid(rawFile({}, 0, MAX_HEADER_BYTES + 1), 'header length', /not a plausible JSON header length/));
  test('header length zero', () => invalid(rawFile({}, 0, 0), 'header length', /0 is not a plausible/));
  test('header not JSON', () => invalid(rawFile('{"a": ', 0), 'header', /not valid UTF-8 JSON/));
  test('header not an object', () => invalid(rawFile('[1, 2]', 0), 'header', /expected a JSON object, got a list/));
  test('entry not an object', () =>
    invalid(rawFile({ w: 3 }, 0), 'tensors["w"]', /expected \{dtype, shape, data_offsets\}/));
  test('unknown dtype', () =>
    invalid(
      rawFile({ w: T('F8_E4M3', [1], [0, 1]) }, 1),
      'tensors["w"].dtype',
      /unsupported dtype "F8_E4M3"; expected one of BOOL/,
    ));
  test('lowercase dtype is unknown', () =>
    invalid(rawFile({ w: T('f32', [1], [0, 4]) }, 4), 'tensors["w"].dtype', /unsupported dtype "f32"/));
  test('bad shape', () =>
    invalid(rawFile({ w: T('F32', [2, -1], [0, 8]) }, 8), 'tensors["w"].shape', /non-negative integers/));
  test('bad offsets', () =>
    invalid(rawFile({ w: T('F32', [2], [0]) }, 8), 'tensors["w"].data_offsets', /expected \[begin, end\]/));
  test('offsets reversed', () =>
    invalid(rawFile({ w: T('F32', [0], [8, 4]) }, 8), 'tensors["w"].data_offsets', /outside the 8-byte data section/));
  test('offsets past the end', () =>
    invalid(rawFile({ w: T('F32', [4], [0, 16]) }, 8), 'tensors["w"].data_offsets', /\[0, 16\] is outside the 8-byte/));
  test('size does not match shape * itemsize', () =>
    invalid(
      rawFile({ w: T('F32', [3], [0, 8]) }, 8),
      'tensors["w"].data_offsets',
      /holds 8 bytes but F32 \[3\] needs 12/,
    ));
  test('overlapping tensors', () =>
    invalid(
      rawFile({ a: T('F32', [2], [0, 8]), b: T('F32', [2], [4, 12]) }, 12),
      'tensors["b"].data_offsets',
      /overlaps tensor "a"/,
    ));
  test('metadata must be strings', () =>
    invalid(rawFile({ __metadata__: { a: 1 } }, 0), '__metadata__.a', /expected a string/));
  test('metadata must be an object', () =>
    invalid(rawFile({ __metadata__: [] }, 0), '__metadata__', /expected an object of strings/));
  test('holes and header padding are accepted', () => {
    const f = parseSafetensors(rawFile({ a: T('U8', [2], [0, 2]), b: T('U8', [2], [4, 6]) }, 8), FILE);
    assert.equal(f.entries.length, 2);
    const padded = parseSafetensors(
      rawFile('{"a": {"dtype": "U8", "shape": [], "data_offsets": [0, 1]}}      ', 1),
      FILE,
    );
    assert.deepEqual(padded.tensor('a')!.shape, []);
  });
});

suite('safetensors: argument_order', () => {
  const order = (meta: Record<string, string> | null, tensors = ['a', 'b']): string[] => {
    const header: Record<string, unknown> = {};
    if (meta) header.__metadata__ = meta;
    tensors.forEach((n, i) => (header[n] = T('U8', [1], [i, i + 1])));
    return readArgumentOrder(parseSafetensors(rawFile(header, tensors.length), FILE));
  };
  const bad = (meta: Record<string, string> | null, field: string, pattern: RegExp): void =>
    assert.throws(
      () => order(meta),
      (err: unknown) =>
        err instanceof ServeError && err.message.startsWith(`${FILE}: ${field}: `) && pattern.test(err.message),
    );

  test('parsed in order', () => assert.deepEqual(order({ argument_order: '["b", "a"]' }), ['b', 'a']));
  test('a subset is allowed (the loader warns)', () => assert.deepEqual(order({ argument_order: '["a"]' }), ['a']));
  test('no tensors, no order: empty', () => assert.deepEqual(order(null, []), []));
  test('tensors but no argument_order', () =>
    bad(null, '__metadata__.argument_order', /missing; the file holds 2 tensors/));
  test('not JSON', () =>
    bad({ argument_order: 'a,b' }, '__metadata__.argument_order', /expected a JSON list of tensor names, got "a,b"/));
  test('not a list', () => bad({ argument_order: '{"a": 1}' }, '__metadata__.argument_order', /expected a JSON list/));
  test('entries are names', () =>
    bad({ argument_order: '["a", 2]' }, '__metadata__.argument_order[1]', /expected a tensor name, got 2/));
  test('named tensor missing', () =>
    bad(
      { argument_order: '["a", "c"]' },
      '__metadata__.argument_order[1]',
      /names tensor "c", which is not in the file/,
    ));
  test('listed twice', () =>
    bad({ argument_order: '["a", "a"]' }, '__metadata__.argument_order[1]', /"a" is listed twice/));
});
