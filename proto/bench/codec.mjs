#!/usr/bin/env node
// Micro-benchmark of the ModelInfer codec: decode and encode time (µs) of a ModelInferRequest /
// ModelInferResponse with one raw tensor of 1 KiB, 1 MiB and 16 MiB (plus a 3-input request shape
// like tritonclient's, parameters included).
//
//   npx tsc -b proto && node proto/bench/codec.mjs [--json]
//
// Each cell is "median (min)" µs per operation over a time-boxed loop. Large encodes are dominated
// by first-touch page faults of freshly allocated output buffers, so medians are bimodal between
// runs (memory reused vs. fresh pages); min shows the copy cost alone. Copies of the tensor bytes:
// decode 0, generated request/response encode 3, generated stream encode 4, single-copy 1
// (grpc-js adds one more for framing in every case).
// Columns:
//   decode           ModelInferRequest.decode(Buffer)  — what the grpc-js server deserializer does
//   encode gen       Buffer.from(X.encode(m).finish()) — the generated grpc-js serializer
//   encode 1-copy    encodeModelInferRequest/Response  — the serializer GRPCInferenceService uses
//   memcpy           Buffer.from(raw) — one copy of the tensor bytes, for scale
import { Buffer } from 'node:buffer';
import { randomFillSync } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import {
  boolParam,
  encodeModelInferRequest,
  encodeModelInferResponse,
  encodeModelStreamInferResponse,
  int64Param,
  ModelInferRequest,
  ModelInferResponse,
  ModelStreamInferResponse,
  stringParam,
  uint64Param,
} from '../dist/src/index.js';

const json = process.argv.includes('--json');

function measure(fn, budgetMs = 400, minIters = 5) {
  for (let i = 0; i < 3; i++) fn(); // warm up
  const samples = [];
  const start = performance.now();
  while (samples.length < minIters || performance.now() - start < budgetMs) {
    const t0 = performance.now();
    fn();
    samples.push(performance.now() - t0);
    if (samples.length >= 200000) break;
  }
  samples.sort((a, b) => a - b);
  return { median: samples[samples.length >> 1] * 1000, min: samples[0] * 1000 }; // µs
}

function request(size) {
  const raw = randomFillSync(new Uint8Array(size)); // touched memory (untouched pages read as the zero page)
  return ModelInferRequest.fromPartial({
    modelName: 'resnet50',
    modelVersion: '1',
    id: 'req-000001',
    parameters: new Map([
      ['sequence_id', int64Param(12345)],
      ['priority', uint64Param(1)],
      ['sequence_start', boolParam(false)],
    ]),
    inputs: [
      { name: 'INPUT0', datatype: 'FP32', shape: [1, size / 4] },
      { name: 'INPUT1', datatype: 'INT64', shape: [1, 2] },
      { name: 'INPUT2', datatype: 'BYTES', shape: [1] },
    ],
    outputs: [{ name: 'OUTPUT0' }],
    rawInputContents: [raw, new Uint8Array(16), Uint8Array.from([3, 0, 0, 0, 0x61, 0x62, 0x63])],
  });
}

function response(size) {
  const raw = randomFillSync(new Uint8Array(size));
  return ModelInferResponse.fromPartial({
    modelName: 'resnet50',
    modelVersion: '1',
    id: 'req-000001',
    parameters: new Map([['note', stringParam('x')]]),
    outputs: [{ name: 'OUTPUT0', datatype: 'FP32', shape: [1, size / 4] }],
    rawOutputContents: [raw],
  });
}

const rows = [];
for (const [label, size] of [
  ['1 KiB', 1024],
  ['1 MiB', 1 << 20],
  ['16 MiB', 16 << 20],
]) {
  const req = request(size);
  const wire = Buffer.from(ModelInferRequest.encode(req).finish());
  const res = response(size);
  const stream = { errorMessage: '', inferResponse: res };
  const budget = size >= 1 << 24 ? 1500 : 400;
  const row = {
    size: label,
    wireBytes: wire.length,
    requestDecode: measure(() => ModelInferRequest.decode(wire), budget),
    requestEncodeGenerated: measure(() => Buffer.from(ModelInferRequest.encode(req).finish()), budget),
    requestEncodeSingleCopy: measure(() => encodeModelInferRequest(req), budget),
    responseEncodeGenerated: measure(() => Buffer.from(ModelInferResponse.encode(res).finish()), budget),
    responseEncodeSingleCopy: measure(() => encodeModelInferResponse(res), budget),
    streamEncodeGenerated: measure(() => Buffer.from(ModelStreamInferResponse.encode(stream).finish()), budget),
    streamEncodeSingleCopy: measure(() => encodeModelStreamInferResponse(stream), budget),
    memcpy: measure(() => Buffer.from(req.rawInputContents[0]), budget),
  };
  // sanity: decoded raw is a view
  const back = ModelInferRequest.decode(wire);
  row.decodeIsView = back.rawInputContents[0].buffer === wire.buffer;
  rows.push(row);
}

if (json) {
  console.log(JSON.stringify({ node: process.version, arch: process.arch, rows }, null, 2));
} else {
  const num = (v) => v.toFixed(v < 10 ? 2 : v < 1000 ? 1 : 0);
  const cell = (m) => `${num(m.median)} (${num(m.min)})`.padStart(17);
  const cols = [
    ['req decode', 'requestDecode'],
    ['req enc gen', 'requestEncodeGenerated'],
    ['req enc 1-copy', 'requestEncodeSingleCopy'],
    ['resp enc gen', 'responseEncodeGenerated'],
    ['resp enc 1-copy', 'responseEncodeSingleCopy'],
    ['stream enc gen', 'streamEncodeGenerated'],
    ['stream enc 1-copy', 'streamEncodeSingleCopy'],
    ['memcpy', 'memcpy'],
  ];
  console.log(`ModelInfer codec, node ${process.version} ${process.arch}; µs per op, median (min)`);
  console.log(['op'.padEnd(18), ...rows.map((r) => r.size.padStart(17))].join(' | '));
  for (const [label, key] of cols) console.log([label.padEnd(18), ...rows.map((r) => cell(r[key]))].join(' | '));
  console.log(['decode is a view'.padEnd(18), ...rows.map((r) => String(r.decodeIsView).padStart(17))].join(' | '));
}
