import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { encodeModelInferResponse, ModelInferRequest, ModelInferResponse, stringParam } from '@hloserve/proto';
import { ServeError } from '@hloserve/common/errors';
import type { WireInferResponse } from '@hloserve/common/wire';
import { fromGrpcRequest, toGrpcResponse } from '../../src/transports/grpc-infer-adapter.js';

// The adapter shares its empty parameters (request side) and empty parameter map (response side)
// between requests to allocate less per request: what one request carries must never show up in
// another's, and a write into the shared empty value must fail rather than leak.

const request = (name: string, shape: number[], params: Record<string, string> = {}) =>
  ModelInferRequest.fromPartial({
    modelName: name,
    inputs: [
      {
        name: `${name}_in`,
        datatype: 'FP32',
        shape,
        parameters: new Map(Object.entries(params).map(([k, v]) => [k, stringParam(v)])),
      },
    ],
    rawInputContents: [new Uint8Array(4 * shape.reduce((a, b) => a * b, 1))],
  });

const response = (name: string, shape: number[], params: Record<string, string> = {}): WireInferResponse => ({
  modelName: name,
  modelVersion: '1',
  id: name,
  outputs: [{ name: `${name}_out`, datatype: 'FP32', shape, parameters: params, data: new Uint8Array(4) }],
});

suite('grpc infer adapter', () => {
  test('interleaved requests with different names, shapes and parameters get their own', () => {
    const a = fromGrpcRequest(ModelInferRequest.decode(ModelInferRequest.encode(request('a', [1, 3])).finish()));
    const b = fromGrpcRequest(
      ModelInferRequest.decode(ModelInferRequest.encode(request('b', [2, 5], { tag: 'x' })).finish()),
    );
    const c = fromGrpcRequest(ModelInferRequest.decode(ModelInferRequest.encode(request('c', [7])).finish()));
    assert.deepEqual(
      [a, b, c].map((r) => [r.modelName, r.inputs[0]!.name, [...r.inputs[0]!.shape], { ...r.inputs[0]!.parameters }]),
      [
        ['a', 'a_in', [1, 3], {}],
        ['b', 'b_in', [2, 5], { tag: 'x' }],
        ['c', 'c_in', [7], {}],
      ],
    );
    assert.equal(a.inputs[0]!.data.kind, 'raw');
    // The shared empty parameters refuse a write instead of carrying it to the next request.
    assert.throws(() => {
      (a.parameters as Record<string, unknown>)['leak'] = 1;
    }, TypeError);
    assert.deepEqual({ ...c.parameters }, {});
  });

  test('responses keep their own outputs and parameters', () => {
    const plain = toGrpcResponse(response('p', [1, 2]));
    const tagged = toGrpcResponse(response('t', [3], { note: 'y' }));
    const again = toGrpcResponse(response('q', [4, 4]));
    const back = [plain, tagged, again].map((r) => ModelInferResponse.decode(encodeModelInferResponse(r).subarray(0)));
    assert.deepEqual(
      back.map((r) => [r.modelName, r.outputs[0]!.name, r.outputs[0]!.shape, [...r.outputs[0]!.parameters.keys()]]),
      [
        ['p', 'p_out', [1, 2], []],
        ['t', 't_out', [3], ['note']],
        ['q', 'q_out', [4, 4], []],
      ],
    );
    assert.equal(plain.parameters.size, 0);
    assert.equal(again.outputs[0]!.parameters.size, 0);
  });

  test('a malformed input still names its field', () => {
    const r = request('m', [1]);
    r.inputs[0]!.datatype = 'NOPE';
    assert.throws(
      () => fromGrpcRequest(r),
      (e: unknown) => e instanceof ServeError && /inputs\[0\] 'm_in': unknown datatype 'NOPE'/.test(e.message),
    );
    const typed = ModelInferRequest.fromPartial({
      modelName: 'm',
      inputs: [{ name: 'x', datatype: 'INT32', shape: [1], contents: { fp32Contents: [1] } }],
    });
    assert.throws(
      () => fromGrpcRequest(typed),
      (e: unknown) =>
        e instanceof ServeError && /inputs\[0\] 'x': INT32 data belongs in contents.int_contents/.test(e.message),
    );
  });
});
