import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { ModelInferRequest } from '@hloserve/proto';
import fc from 'fast-check';
import { keptNames, MAX_ITEMS, peekInfer } from '@hloserve/gateway/routing/infer-peek';
import { WorkerLoad } from '@hloserve/gateway/placement/fill-plan';

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

  test("an extent near 2^63 counts as MAX_ITEMS, so taking it off a worker's load leaves the others' intact", () => {
    const huge = encode({ modelName: 'm', inputs: [{ name: 'x', datatype: 'FP32', shape: [2 ** 62, 4] }] });
    const { items } = peekInfer(huge);
    assert.equal(items, MAX_ITEMS);
    // What the router does with it beside three items already in flight on the same worker.
    const load = new WorkerLoad();
    load.add('w0', 3);
    load.add('w0', items);
    load.add('w0', -items);
    assert.equal(load.get('w0'), 3);
    // Unclamped, the sum lost the three: the worker's load then read -3 once they ended.
    const raw = new WorkerLoad();
    raw.add('w0', 3);
    raw.add('w0', 2 ** 62);
    raw.add('w0', -(2 ** 62));
    assert.notEqual(raw.get('w0'), 3);
  });

  test('a name longer than a directory name is decoded but not kept', () => {
    const before = keptNames();
    for (let i = 0; i < 4; i++)
      assert.equal(peekInfer(encode({ modelName: `${i}${'n'.repeat(100_000)}` })).modelName.length, 100_001);
    assert.deepEqual(keptNames(), before);
  });

  test('any bytes (mutated requests, seeded): a name and an item count in range, or an Error', () => {
    const valid = encode({
      modelName: 'mlp',
      id: 'r',
      inputs: [{ name: 'x', datatype: 'FP32', shape: [2, 784] }],
      rawInputContents: [new Uint8Array(16)],
    });
    const mutated = fc
      .array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 }), fc.constantFrom('flip', 'cut', 'insert')), {
        minLength: 1,
        maxLength: 6,
      })
      .map((edits) => {
        let b = Buffer.from(valid);
        for (const [at, v, kind] of edits) {
          const i = at % (b.length + 1);
          if (kind === 'flip' && i < b.length) b[i] = v;
          else if (kind === 'cut') b = b.subarray(0, i);
          else b = Buffer.concat([b.subarray(0, i), Buffer.from([v]), b.subarray(i)]);
        }
        return new Uint8Array(b);
      });
    fc.assert(
      fc.property(fc.oneof(mutated, fc.uint8Array({ maxLength: 64 })), (bytes) => {
        let peek;
        try {
          peek = peekInfer(bytes);
        } catch (e) {
          return e instanceof Error;
        }
        return (
          typeof peek.modelName === 'string' &&
          Number.isSafeInteger(peek.items) &&
          peek.items >= 1 &&
          peek.items <= MAX_ITEMS
        );
      }),
      { numRuns: 3000, seed: 29 },
    );
  });

  test('past the cache bound, new names still decode', () => {
    for (let i = 0; i < 400; i++) assert.equal(peekInfer(encode({ modelName: `m${i}` })).modelName, `m${i}`);
    assert.equal(peekInfer(encode({ modelName: 'm7' })).modelName, 'm7');
  });
});
