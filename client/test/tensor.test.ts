import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { fromHttpError, Status } from '../src/client-error.js';
import { bytesTensor, checkTensor, tensor, tensorBytes, tensorFromBytes } from '../src/tensor.js';

suite('tensors', () => {
  test('numeric tensors go out as views of their bytes and come back as their typed array', () => {
    const data = new Int32Array([1, -2, 3, 4, 5, 6]);
    const t = tensor(data, [2, 3]);
    assert.equal(t.datatype, 'INT32');
    const bytes = tensorBytes(t);
    assert.equal(bytes.buffer, data.buffer, 'no copy');
    const back = tensorFromBytes('INT32', [2, 3], bytes);
    assert.deepEqual(back.data, data);
    assert.deepEqual(tensor(new BigInt64Array([1n]), [1]).datatype, 'INT64');
  });

  test('bytes at an odd offset (a view into a received message) are copied, not misread', () => {
    const f = new Float64Array([1.5, -2.25]);
    const wire = new Uint8Array(17);
    wire.set(new Uint8Array(f.buffer), 1);
    const t = tensorFromBytes('FP64', [2], wire.subarray(1));
    assert.deepEqual(Array.from(t.data as Float64Array), [1.5, -2.25]);
  });

  test('BYTES round-trips with little-endian uint32 length prefixes', () => {
    const t = bytesTensor(['ab', new Uint8Array([0, 255]), '']);
    const bytes = tensorBytes(t);
    assert.deepEqual(Array.from(bytes.subarray(0, 6)), [2, 0, 0, 0, 97, 98]);
    const back = tensorFromBytes('BYTES', [3], bytes);
    assert.deepEqual(
      (back.data as Uint8Array[]).map((e) => Array.from(e)),
      [[97, 98], [0, 255], []],
    );
    assert.throws(() => tensorFromBytes('BYTES', [4], bytes), /3 elements, shape says 4/);
  });

  test('a shape that does not match the data, or the wrong array for a datatype, is refused before sending', () => {
    assert.throws(() => checkTensor('x', tensor(new Float32Array(5), [2, 3])), /holds 6 elements, data has 5/);
    assert.throws(() => checkTensor('x', { datatype: 'FP32', shape: [1], data: new Float64Array(1) }), /Float32Array/);
    assert.throws(() => tensorFromBytes('FP32', [3], new Uint8Array(8)), /needs 12 bytes/);
  });
});

suite('HTTP errors', () => {
  test('the catalogue code sets the status exactly; without one the HTTP status decides', () => {
    const e = fromHttpError(400, JSON.stringify({ error: 'gone', code: 'HLO_ERR_SHM_REGION_UNKNOWN' }));
    assert.equal(e.code, Status.FAILED_PRECONDITION);
    assert.equal(e.catalogueCode, 'HLO_ERR_SHM_REGION_UNKNOWN');
    assert.equal(e.message, 'gone');
    const p = fromHttpError(503, '<html>proxy</html>');
    assert.equal(p.code, Status.UNAVAILABLE);
    assert.equal(p.catalogueCode, undefined);
    assert.equal(fromHttpError(429, '{"error":"full","code":"NOT_A_CODE"}').code, Status.RESOURCE_EXHAUSTED);
  });
});
