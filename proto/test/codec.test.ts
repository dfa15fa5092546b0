import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  boolParam,
  DataType,
  doubleParam,
  encodeModelInferRequest,
  encodeModelInferResponse,
  encodeModelStreamInferResponse,
  int64Param,
  LogSettingsRequest,
  ModelConfig,
  ModelInferRequest,
  ModelInferResponse,
  ModelQueuePolicy,
  ModelRepositoryParameter,
  ModelStreamInferResponse,
  paramValue,
  RepositoryModelLoadRequest,
  stringParam,
  uint64Param,
} from '../src/index.js';

function bytes(n: number, seed = 1): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (i * 31 + seed) & 0xff;
  return b;
}

function sampleRequest(rawSize: number): ModelInferRequest {
  return ModelInferRequest.fromPartial({
    modelName: 'resnet',
    modelVersion: '3',
    id: 'req-42',
    parameters: new Map([
      ['sequence_start', boolParam(true)],
      ['sequence_id', int64Param(-(2 ** 40))],
      ['user', stringParam('αβγ')],
      ['temperature', doubleParam(0.75)],
      ['priority', uint64Param(2 ** 52)],
      ['__proto__', stringParam('kept as a plain key')],
    ]),
    inputs: [
      {
        name: 'INPUT0',
        datatype: 'FP32',
        shape: [2, rawSize / 8],
        parameters: new Map([['shared_memory_offset', int64Param(0)]]),
      },
      { name: 'INPUT1', datatype: 'BYTES', shape: [3] },
    ],
    outputs: [{ name: 'OUTPUT0', parameters: new Map([['classification', int64Param(5)]]) }],
    rawInputContents: [bytes(rawSize), Uint8Array.from([1, 0, 0, 0, 0x61, 3, 0, 0, 0, 0x62, 0x63, 0x64, 0, 0, 0, 0])],
  });
}

test('ModelInferRequest round trip: raw contents and every InferParameter kind', () => {
  const req = sampleRequest(1024);
  const wire = ModelInferRequest.encode(req).finish();
  const back = ModelInferRequest.decode(wire);
  assert.deepEqual(back, req);

  const p = back.parameters;
  assert.deepEqual(p.get('sequence_start')?.parameterChoice, { $case: 'boolParam', value: true });
  assert.deepEqual(p.get('sequence_id')?.parameterChoice, { $case: 'int64Param', value: String(-(2 ** 40)) });
  assert.deepEqual(p.get('user')?.parameterChoice, { $case: 'stringParam', value: 'αβγ' });
  assert.deepEqual(p.get('temperature')?.parameterChoice, { $case: 'doubleParam', value: 0.75 });
  assert.deepEqual(p.get('priority')?.parameterChoice, { $case: 'uint64Param', value: String(2 ** 52) });
  assert.equal(paramValue(p.get('__proto__')), 'kept as a plain key');
  assert.equal(paramValue(p.get('missing')), undefined);
  assert.equal(back.inputs[0]!.shape[1], 128);
  assert.equal(paramValue(back.outputs[0]!.parameters.get('classification')), 5);
  assert.equal(back.rawInputContents.length, 2);
  assert.deepEqual(back.rawInputContents[0], bytes(1024));
});

test('decoded raw_input_contents are views into the received buffer (no copy)', () => {
  const wire = Buffer.from(ModelInferRequest.encode(sampleRequest(1 << 20)).finish());
  const back = ModelInferRequest.decode(wire);
  for (const raw of back.rawInputContents) {
    assert.equal(raw.buffer, wire.buffer, 'raw content shares the message ArrayBuffer');
    assert.ok(raw.byteOffset >= wire.byteOffset && raw.byteOffset + raw.byteLength <= wire.byteOffset + wire.length);
  }
  // Writing through the view changes the message buffer: proof that nothing was copied.
  const raw0 = back.rawInputContents[0]!;
  const at = raw0.byteOffset - wire.byteOffset;
  raw0[0] = 0xee;
  assert.equal(wire[at], 0xee);
});

test('single-copy serializers produce exactly the generated encoding', () => {
  for (const size of [16, 4096, 1 << 20]) {
    const req = sampleRequest(size);
    assert.deepEqual(
      new Uint8Array(encodeModelInferRequest(req)),
      ModelInferRequest.encode(req).finish(),
      `request ${size}`,
    );
    const resp = ModelInferResponse.fromPartial({
      modelName: 'm',
      id: 'x',
      parameters: new Map([['triton_final_response', boolParam(true)]]),
      outputs: [
        { name: 'A', datatype: 'FP32', shape: [size / 4] },
        { name: 'B', datatype: 'UINT8', shape: [0] },
      ],
      rawOutputContents: [bytes(size, 7), new Uint8Array(0)],
    });
    const generated = ModelInferResponse.encode(resp).finish();
    assert.deepEqual(new Uint8Array(encodeModelInferResponse(resp)), generated, `response ${size}`);
    assert.deepEqual(ModelInferResponse.decode(new Uint8Array(encodeModelInferResponse(resp))), resp);

    for (const stream of [
      { errorMessage: '', inferResponse: resp },
      { errorMessage: 'bad input', inferResponse: undefined },
      { errorMessage: 'partial', inferResponse: resp },
    ]) {
      assert.deepEqual(
        new Uint8Array(encodeModelStreamInferResponse(stream)),
        ModelStreamInferResponse.encode(stream).finish(),
        `stream ${size} ${stream.errorMessage}`,
      );
    }
  }
});

test('int64 parameters beyond 2^53 decode losslessly (jstype = JS_STRING)', () => {
  // field 4 map entry {key:"k", value:{int64_param: 2^63-1}} written by hand
  const value = [0x10, ...varint(2n ** 63n - 1n)]; // InferParameter.int64_param
  const entry = [0x0a, 1, 0x6b, 0x12, value.length, ...value];
  const msg = Uint8Array.from([0x22, entry.length, ...entry]);
  const p = ModelInferRequest.decode(msg).parameters.get('k');
  assert.deepEqual(p?.parameterChoice, { $case: 'int64Param', value: '9223372036854775807' });
  const again = ModelInferRequest.decode(ModelInferRequest.encode(ModelInferRequest.decode(msg)).finish());
  assert.deepEqual(again.parameters.get('k')?.parameterChoice, p?.parameterChoice);
});

test('a shape extent beyond 2^53 is still refused on decode (no tensor can have one)', () => {
  const t = [0x0a, 1, 0x78, 0x12, 4, ...Buffer.from('FP32'), 0x18, ...varint(2n ** 60n)];
  const msg = Uint8Array.from([0x2a, t.length, ...t]);
  assert.throws(() => ModelInferRequest.decode(msg), /MAX_SAFE_INTEGER/);
});

function varint(v: bigint): number[] {
  const out: number[] = [];
  while (v > 0x7fn) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
  return out;
}

test('ModelConfig: oneof scheduling choice, enums, maps with uint64 keys', () => {
  const cfg = ModelConfig.fromPartial({
    name: 'resnet',
    platform: 'stablehlo',
    backend: 'pjrt',
    maxBatchSize: 8,
    input: [{ name: 'x', dataType: DataType.TYPE_BF16, dims: [3, -1, -1] }],
    output: [{ name: 'y', dataType: DataType.TYPE_STRING, dims: [1000] }],
    schedulingChoice: {
      $case: 'dynamicBatching',
      value: {
        preferredBatchSize: [4, 8],
        maxQueueDelayMicroseconds: 500,
        // Map values in fromPartial must be complete messages (type-wise): build them with fromPartial
        priorityQueuePolicy: new Map([[1, ModelQueuePolicy.fromPartial({ maxQueueSize: 16 })]]),
      },
    },
    instanceGroup: [{ count: 1, kind: 1, gpus: [0] }],
    parameters: new Map([['bundle', { stringValue: '/models/resnet' }]]),
    modelTransactionPolicy: { decoupled: false },
    responseCache: { enable: true },
    versionPolicy: { policyChoice: { $case: 'latest', value: { numVersions: 1 } } },
  });
  const back = ModelConfig.decode(ModelConfig.encode(cfg).finish());
  assert.deepEqual(back, cfg);
  assert.equal(back.schedulingChoice?.$case, 'dynamicBatching');
  if (back.schedulingChoice?.$case === 'dynamicBatching') {
    assert.equal(back.schedulingChoice.value.priorityQueuePolicy.get(1)?.maxQueueSize, 16);
  }
  const seq = ModelConfig.decode(
    ModelConfig.encode(
      ModelConfig.fromPartial({ schedulingChoice: { $case: 'sequenceBatching', value: {} } }),
    ).finish(),
  );
  assert.equal(seq.schedulingChoice?.$case, 'sequenceBatching', 'an empty sequence_batching is still present');
  assert.equal(DataType.TYPE_STRING, 13);
  assert.equal(DataType.TYPE_BF16, 14);
});

test('repository and log settings oneofs', () => {
  const load = RepositoryModelLoadRequest.fromPartial({
    modelName: 'm',
    parameters: new Map<string, ModelRepositoryParameter>([
      ['config', { parameterChoice: { $case: 'stringParam', value: '{"max_batch_size":4}' } }],
      ['file:1/model.mlir', { parameterChoice: { $case: 'bytesParam', value: bytes(64) } }],
    ]),
  });
  assert.deepEqual(RepositoryModelLoadRequest.decode(RepositoryModelLoadRequest.encode(load).finish()), load);
  const log = LogSettingsRequest.fromPartial({
    settings: new Map([['log_verbose_level', { parameterChoice: { $case: 'uint32Param', value: 1 } }]]),
  });
  assert.deepEqual(LogSettingsRequest.decode(LogSettingsRequest.encode(log).finish()), log);
});

test('toJSON/fromJSON use Triton JSON names (snake_case, enum names, defaults printed)', () => {
  const cfg = ModelConfig.fromPartial({
    name: 'm',
    maxBatchSize: 4,
    input: [{ name: 'x', dataType: DataType.TYPE_FP32, dims: [3, -1] }],
    schedulingChoice: { $case: 'dynamicBatching', value: { maxQueueDelayMicroseconds: 100 } },
  });
  const json = ModelConfig.toJSON(cfg) as Record<string, unknown>;
  assert.equal(json['max_batch_size'], 4);
  assert.deepEqual((json['input'] as Record<string, unknown>[])[0]!['dims'], [3, -1]);
  assert.equal((json['input'] as Record<string, unknown>[])[0]!['data_type'], 'TYPE_FP32');
  assert.equal((json['dynamic_batching'] as Record<string, unknown>)['max_queue_delay_microseconds'], 100);
  assert.equal(json['platform'], '', 'defaults are printed');
  // tritonclient load_model(config=...) sends this form; int64 may arrive as strings
  const back = ModelConfig.fromJSON({
    name: 'n',
    max_batch_size: 2,
    input: [{ name: 'x', data_type: 'TYPE_BF16', dims: ['2', 3] }],
  });
  assert.equal(back.maxBatchSize, 2);
  assert.equal(back.input[0]!.dataType, DataType.TYPE_BF16);
  assert.deepEqual(back.input[0]!.dims, [2, 3]);
});
