import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { ModelInferRequest } from '@hloserve/proto';
import { peekInfer } from '@hloserve/gateway/routing/infer-peek';

const encode = (p: Parameters<typeof ModelInferRequest.fromPartial>[0]) =>
  ModelInferRequest.encode(ModelInferRequest.fromPartial(p)).finish();

suite('reading routing fields from raw ModelInfer bytes', () => {
  test('model name and the leading extent of the first input', () => {
    const buf = encode({
      modelName: 'résnet',
      id: 'r1',
      inputs: [
        { name: 'x', datatype: 'FP32', shape: [6, 3, 32, 32] },
        { name: 'y', datatype: 'FP32', shape: [9] },
      ],
      rawInputContents: [new Uint8Array(64)],
    });
    assert.deepEqual(peekInfer(buf), { modelName: 'résnet', items: 6 });
  });

  test('no inputs, or a scalar input, count as one item', () => {
    assert.deepEqual(peekInfer(encode({ modelName: 'm' })), { modelName: 'm', items: 1 });
    assert.deepEqual(peekInfer(encode({ modelName: 'm', inputs: [{ name: 'x', datatype: 'FP32', shape: [] }] })), {
      modelName: 'm',
      items: 1,
    });
  });

  test('fields in any order (inputs before the name) and large extents', () => {
    const a = encode({ inputs: [{ name: 'x', datatype: 'FP32', shape: [300_000, 2] }] });
    const b = encode({ modelName: 'late' });
    const both = new Uint8Array([...a, ...b]);
    assert.deepEqual(peekInfer(both), { modelName: 'late', items: 300_000 });
  });

  test('bytes that are not a message throw', () => {
    assert.throws(() => peekInfer(new Uint8Array([0x0a, 0x50, 0x41])));
    assert.throws(() => peekInfer(new Uint8Array([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff])));
  });

  test('a name seen before comes back as the same string; names alike in length and ends stay apart', () => {
    // Same length, first and last byte: the cache's bucket key is shared, the bytes decide.
    const names = ['mab', 'mcb', 'mab', 'mdb', 'mcb', 'résnet', 'résnet'];
    const got = names.map((n) => peekInfer(encode({ modelName: n })).modelName);
    assert.deepEqual(got, names);
    const again = peekInfer(Buffer.from(encode({ modelName: 'résnet', id: 'x' }))).modelName;
    assert.equal(again, 'résnet');
    // The name is not a view of the request: a reused request buffer does not change it.
    const buf = Buffer.from(encode({ modelName: 'zzz' }));
    const name = peekInfer(buf).modelName;
    buf.fill(0x61, 2, 5);
    assert.equal(name, 'zzz');
    assert.equal(peekInfer(buf).modelName, 'aaa');
  });

  test('past the cache bound, new names still decode', () => {
    for (let i = 0; i < 400; i++) assert.equal(peekInfer(encode({ modelName: `m${i}` })).modelName, `m${i}`);
    assert.equal(peekInfer(encode({ modelName: 'm7' })).modelName, 'm7');
  });
});
