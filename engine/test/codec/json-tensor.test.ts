import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { ServeError } from '@hloserve/common/errors';
import { decodeJsonTensor, MAX_JSON_DEPTH } from '../../src/codec/json-tensor.js';
import { scanInferJson } from '../../src/codec/json-skeleton.js';

const dec = (text: string, datatype: string, shape: number[]) => {
  const b = Buffer.from(text);
  return Buffer.from(decodeJsonTensor(b, 0, b.byteLength, datatype, shape, 'd'));
};
const refused = (text: string, datatype: string, shape: number[], re?: RegExp) =>
  assert.throws(
    () => dec(text, datatype, shape),
    (e: unknown) => e instanceof ServeError && e.code === 'HLO_ERR_INVALID_ARGUMENT' && (!re || re.test(e.message)),
  );

suite('JSON tensor data, decoded straight into typed buffers', () => {
  test('flat and nested forms give the same bytes; numbers are read exactly', () => {
    const flat = dec('[0.1, -2.5e-3, 3, 1e-7, 123456.789, -0]', 'FP64', [2, 3]);
    const nested = dec('[[0.1,-2.5e-3,3],[1e-7,123456.789,-0]]', 'FP64', [2, 3]);
    assert.deepEqual(flat, nested);
    assert.deepEqual([...new Float64Array(flat.buffer, flat.byteOffset, 6)], [0.1, -2.5e-3, 3, 1e-7, 123456.789, -0]);
    const long = dec('[0.12437311935807422, 3.141592653589793238]', 'FP64', [2]);
    assert.deepEqual([...new Float64Array(long.buffer, long.byteOffset, 2)], [Number('0.12437311935807422'), Math.PI]);
  });

  test('numbers of up to 25 digits, with and without exponents, decode exactly as Number() reads them', () => {
    let seed = 12345;
    const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const digits = (n: number) => Array.from({ length: n }, () => Math.floor(rnd() * 10)).join('');
    const texts: string[] = ['9007199254740991', '9007199254740992', '9007199254740993', '0.9007199254740993'];
    for (let i = 0; i < 5000; i++) {
      const int = rnd() < 0.5 ? '0' : digits(1 + Math.floor(rnd() * 6));
      const t = `${rnd() < 0.3 ? '-' : ''}${int}.${digits(1 + Math.floor(rnd() * 24))}`;
      texts.push(rnd() < 0.1 ? `${t}e${Math.floor(rnd() * 40) - 20}` : t);
    }
    const f64 = dec(`[${texts.join(',')}]`, 'FP64', [texts.length]);
    const f32 = dec(`[${texts.join(',')}]`, 'FP32', [texts.length]);
    const a = new Float64Array(f64.buffer, f64.byteOffset, texts.length);
    const b = new Float32Array(f32.buffer, f32.byteOffset, texts.length);
    texts.forEach((t, i) => {
      assert.equal(a[i], Number(t), t);
      assert.equal(b[i], Math.fround(Number(t)), t);
    });
  });

  test('16 to 19 digits, as JSON writers print doubles and float32s, and decimals a hair from a tie, decode as Number() reads them', () => {
    let seed = 4242;
    const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const texts: string[] = [];
    const view = new DataView(new ArrayBuffer(8));
    for (let i = 0; i < 20_000; i++) {
      const x = (rnd() + rnd() * 2 ** -26) * 10 ** (Math.floor(rnd() * 12) - 6);
      texts.push(JSON.stringify(x), JSON.stringify(Math.fround(x)));
      // The midpoint between x and the next double up, exactly (2m + 1) / 2^(1 - E) for x = m 2^E,
      // and the 19-digit decimals just below and just above it: each must round to its own side.
      if (x < 0.01 || x > 1000) continue;
      view.setFloat64(0, x);
      const hiWord = view.getUint32(0);
      const E = ((hiWord >>> 20) & 0x7ff) - 1075;
      const m = (BigInt(hiWord & 0xfffff) << 32n) | BigInt(view.getUint32(4)) | (1n << 52n);
      const k = 18 - Math.floor(Math.log10(x));
      const n = ((2n * m + 1n) * 10n ** BigInt(k)) >> BigInt(1 - E);
      for (const d of [n, n + 1n]) {
        const digits = d.toString().padStart(k + 1, '0');
        texts.push(`${digits.slice(0, digits.length - k)}.${digits.slice(digits.length - k)}`);
      }
    }
    const f64 = dec(`[${texts.join(',')}]`, 'FP64', [texts.length]);
    const f32 = dec(`[${texts.join(',')}]`, 'FP32', [texts.length]);
    const a = new Float64Array(f64.buffer, f64.byteOffset, texts.length);
    const b = new Float32Array(f32.buffer, f32.byteOffset, texts.length);
    for (let i = 0; i < texts.length; i++) {
      assert.equal(a[i], Number(texts[i]), texts[i]);
      assert.equal(b[i], Math.fround(Number(texts[i])), texts[i]);
    }
  });

  test('every integer type is range-checked; INT64/UINT64 keep every digit past 2^53', () => {
    assert.deepEqual([...dec('[-128,127]', 'INT8', [2])], [128, 127]);
    refused('[128]', 'INT8', [1]);
    refused('[1.5]', 'INT32', [1]);
    refused('[-1]', 'UINT16', [1]);
    const i64 = dec('[9223372036854775807, "-9223372036854775808", 1e3]', 'INT64', [3]);
    assert.deepEqual(
      [i64.readBigInt64LE(0), i64.readBigInt64LE(8), i64.readBigInt64LE(16)],
      [2n ** 63n - 1n, -(2n ** 63n), 1000n],
    );
    refused('[9223372036854775808]', 'INT64', [1]);
    assert.equal(dec('[18446744073709551615]', 'UINT64', [1]).readBigUInt64LE(0), 2n ** 64n - 1n);
    assert.deepEqual([...dec('[true,false,1,0]', 'BOOL', [4])], [1, 0, 1, 0]);
  });

  test('BYTES: strings with and without escapes, length-prefixed', () => {
    const b = dec('["ab","c\\"d\\u00e9"]', 'BYTES', [2]);
    assert.equal(b.readUInt32LE(0), 2);
    assert.equal(b.subarray(4, 6).toString(), 'ab');
    assert.equal(b.subarray(10).toString(), 'c"dé');
  });

  test('refused: ragged rows, mixed levels, non-finite values, nulls, counts, depth, FP16', () => {
    refused('[[1,2,3],[4,5]]', 'FP32', [2, 3]);
    refused('[[1,2],[3,4,5,6]]', 'FP32', [2, 3], /row/);
    refused('[1,[2,3]]', 'FP32', [3]);
    refused('[[1,2],3]', 'FP32', [3]);
    refused('[1e400]', 'FP64', [1], /beyond the range/);
    refused('[1e39]', 'FP32', [1]);
    refused('[null]', 'FP32', [1]);
    refused('[1,2]', 'FP32', [3]);
    refused('[1,2,3,4]', 'FP32', [3]);
    refused('[1,]', 'FP32', [1]);
    refused('[1 2]', 'FP32', [2]);
    refused('5', 'FP32', [1]);
    refused('[1]]', 'FP32', [1]);
    refused('['.repeat(MAX_JSON_DEPTH + 1) + ']'.repeat(MAX_JSON_DEPTH + 1), 'FP32', [0]);
    refused('[[[1]]]', 'FP32', [1, 1]);
    refused('[1]', 'FP16', [1], /binary/);
    refused('[1,2,3]', 'FP32', [2 ** 20, 2 ** 20], /cannot hold/);
  });

  // A hang guard, not a timing: quadratic searches would take minutes here.
  test('the skeleton leaves data out of JSON.parse and refuses deep nesting elsewhere', { timeout: 60_000 }, () => {
    const body = Buffer.from('{"id":"q","inputs":[{"name":"a","data":[[1,2],[3,4]],"shape":[2,2]},{"name":"b"}]}');
    const { doc, data } = scanInferJson(body, body.byteLength);
    assert.deepEqual(doc, { id: 'q', inputs: [{ name: 'a', data: null, shape: [2, 2] }, { name: 'b' }] });
    const r = data.get(0)!;
    assert.equal(body.subarray(r.start, r.end).toString(), '[[1,2],[3,4]]');
    assert.equal(data.size, 1);
    // Numeric data is found by searching for its brackets; anything in it that could hide one (a
    // string, an object) is walked instead, and a body cut short is refused either way.
    const cases: [string, string][] = [
      ['[1.5, 2e-3 ,3]', '"shape":[3]'],
      ['["a]b","c"]', '"shape":[2]'],
      ['[[1],[2]]', '"shape":[2,1]'],
      ['[ [[1, 2]] , [[3,4]] ]', '"shape":[2,1,2]'],
      ['[[1],["]"]]', '"shape":[2,1]'],
      ['[{"x":"]"}]', '"shape":[1]'],
      ['[]', '"shape":[0]'],
    ];
    for (const [value, next] of cases) {
      const text = `{"inputs":[{"data":${value},${next}},{"name":"b","data":[7],"shape":[1]}]}`;
      const b = Buffer.from(text);
      const got = scanInferJson(b, b.byteLength).data;
      assert.equal(b.subarray(got.get(0)!.start, got.get(0)!.end).toString(), value, text);
      assert.equal(b.subarray(got.get(1)!.start, got.get(1)!.end).toString(), '[7]', text);
      const cut = b.indexOf(value) + value.length - 1;
      assert.throws(() => scanInferJson(b, cut), ServeError, `cut at ${cut}: ${text}`);
    }
    // The searches for an array's end stop near it: a million data values in one input, with no
    // '{' after them, scan in one pass (searches to the body's end would make this quadratic).
    for (const value of ['[1]', '[[1]]']) {
      const many = Buffer.from(`{"inputs":[{${`"data":${value},`.repeat(1_000_000)}"name":"x"}]}`);
      assert.equal(scanInferJson(many, many.byteLength).data.size, 1);
    }
    const deep = Buffer.from(`{"parameters":${'['.repeat(100_000)}${']'.repeat(100_000)}}`);
    assert.throws(() => scanInferJson(deep, deep.byteLength), /nesting/);
    const trailing = Buffer.from('{} {}');
    assert.throws(() => scanInferJson(trailing, trailing.byteLength), ServeError);
  });
});
