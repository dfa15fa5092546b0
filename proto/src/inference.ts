// package inference: KServe V2 / Triton messages, the GRPCInferenceService definition and client,
// plus serializers for the two hot RPCs that copy tensor bytes once instead of three times.
import { makeGenericClientConstructor } from '@grpc/grpc-js';
import {
  GRPCInferenceServiceClient,
  GRPCInferenceServiceService,
  type InferParameter,
  ModelInferRequest,
  ModelInferResponse,
  ModelStreamInferResponse,
} from '../generated/inference/grpc_service.js';

export * from '../generated/inference/grpc_service.js';
export * from '../generated/inference/model_config.js';

// ---------------------------------------------------------------------------------------------
// Serializers
//
// The generated encoders copy every bytes field into a growing buffer, copy that buffer again in
// finish(), and the generated grpc-js serializer copies it a third time with Buffer.from(); a
// streamed response adds a fourth (fork/join shifts the nested message). The functions below
// encode everything except the raw tensor contents with the generated code and append the raw
// contents as length-delimited fields behind it, so each tensor byte is copied once (grpc-js then
// copies once more into its framed buffer). Output bytes are identical to the generated
// encoder's: the raw contents have the highest field number, which the generated code writes last.

/** Tag of ModelInferRequest.raw_input_contents (field 7, wire type 2). */
const TAG_RAW_INPUT = (7 << 3) | 2;
/** Tag of ModelInferResponse.raw_output_contents (field 6, wire type 2). */
const TAG_RAW_OUTPUT = (6 << 3) | 2;
/** Tag of ModelStreamInferResponse.infer_response (field 2, wire type 2). */
const TAG_STREAM_RESPONSE = (2 << 3) | 2;

/** Below this many raw bytes the plain generated encoder is as fast (fewer chunks). */
const SPLIT_THRESHOLD = 4096;

/** Encoded message as a list of chunks to be concatenated in order. */
export interface EncodedChunks {
  chunks: Uint8Array[];
  byteLength: number;
}

/** Tag + varint length prefix of one length-delimited field. */
function fieldHeader(tag: number, len: number): Uint8Array {
  const out: number[] = [tag];
  let n = len;
  while (n > 0x7f) {
    out.push((n % 0x80) | 0x80);
    n = Math.floor(n / 0x80);
  }
  out.push(n);
  return Uint8Array.from(out);
}

function rawBytes(list: readonly Uint8Array[]): number {
  let total = 0;
  for (const b of list) total += b.byteLength;
  return total;
}

function withRaw(head: Uint8Array, tag: number, raws: readonly Uint8Array[]): EncodedChunks {
  const chunks: Uint8Array[] = [head];
  let byteLength = head.byteLength;
  for (const raw of raws) {
    const h = fieldHeader(tag, raw.byteLength);
    chunks.push(h, raw);
    byteLength += h.byteLength + raw.byteLength;
  }
  return { chunks, byteLength };
}

/** Wraps a Uint8Array as a Buffer without copying. */
function asBuffer(u8: Uint8Array): Buffer {
  return Buffer.isBuffer(u8) ? u8 : Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength);
}

function concat(e: EncodedChunks): Buffer {
  return e.chunks.length === 1 ? asBuffer(e.chunks[0]!) : Buffer.concat(e.chunks, e.byteLength);
}

export function encodeModelInferRequestChunks(msg: ModelInferRequest): EncodedChunks {
  if (rawBytes(msg.rawInputContents) < SPLIT_THRESHOLD) {
    const u8 = ModelInferRequest.encode(msg).finish();
    return { chunks: [u8], byteLength: u8.byteLength };
  }
  const head = ModelInferRequest.encode({ ...msg, rawInputContents: [] }).finish();
  return withRaw(head, TAG_RAW_INPUT, msg.rawInputContents);
}

export function encodeModelInferResponseChunks(msg: ModelInferResponse): EncodedChunks {
  if (rawBytes(msg.rawOutputContents) < SPLIT_THRESHOLD) {
    const u8 = ModelInferResponse.encode(msg).finish();
    return { chunks: [u8], byteLength: u8.byteLength };
  }
  const head = ModelInferResponse.encode({ ...msg, rawOutputContents: [] }).finish();
  return withRaw(head, TAG_RAW_OUTPUT, msg.rawOutputContents);
}

export function encodeModelStreamInferResponseChunks(msg: ModelStreamInferResponse): EncodedChunks {
  const inner = msg.inferResponse;
  if (inner === undefined || rawBytes(inner.rawOutputContents) < SPLIT_THRESHOLD) {
    const u8 = ModelStreamInferResponse.encode(msg).finish();
    return { chunks: [u8], byteLength: u8.byteLength };
  }
  const head = ModelStreamInferResponse.encode({ errorMessage: msg.errorMessage, inferResponse: undefined }).finish();
  const body = encodeModelInferResponseChunks(inner);
  const h = fieldHeader(TAG_STREAM_RESPONSE, body.byteLength);
  return {
    chunks: [head, h, ...body.chunks],
    byteLength: head.byteLength + h.byteLength + body.byteLength,
  };
}

/**
 * A ModelStreamInferResponse around a ModelInferResponse that is already encoded (a proxy's
 * answer from a worker), without decoding it: the field's header, then the bytes as they came.
 */
export function streamInferResponseAround(encoded: Uint8Array): Buffer {
  return Buffer.concat([fieldHeader(TAG_STREAM_RESPONSE, encoded.byteLength), encoded]);
}

/** ModelInferRequest -> wire bytes, raw inputs copied once. */
export function encodeModelInferRequest(msg: ModelInferRequest): Buffer {
  return concat(encodeModelInferRequestChunks(msg));
}

/** ModelInferResponse -> wire bytes, raw outputs copied once. */
export function encodeModelInferResponse(msg: ModelInferResponse): Buffer {
  return concat(encodeModelInferResponseChunks(msg));
}

/** ModelStreamInferResponse -> wire bytes, raw outputs copied once. */
export function encodeModelStreamInferResponse(msg: ModelStreamInferResponse): Buffer {
  return concat(encodeModelStreamInferResponseChunks(msg));
}

// ---------------------------------------------------------------------------------------------
// Service definition and client

/**
 * The GRPCInferenceService definition to pass to grpc-js `server.addService(GRPCInferenceService, impl)`.
 * Same paths and decoders as the generated `GRPCInferenceServiceService`; ModelInfer and
 * ModelStreamInfer use the single-copy serializers above. Decoded requests hold views into the
 * received message (raw_input_contents are not copied).
 */
export const GRPCInferenceService: GRPCInferenceServiceService = {
  ...GRPCInferenceServiceService,
  modelInfer: {
    ...GRPCInferenceServiceService.modelInfer,
    requestSerialize: encodeModelInferRequest,
    responseSerialize: encodeModelInferResponse,
  },
  modelStreamInfer: {
    ...GRPCInferenceServiceService.modelStreamInfer,
    requestSerialize: encodeModelInferRequest,
    responseSerialize: encodeModelStreamInferResponse,
  },
};

/**
 * Client constructor for GRPCInferenceService built on `GRPCInferenceService` (single-copy request
 * serializer). `new GRPCInferenceClient('127.0.0.1:8001', credentials.createInsecure(), opts)`.
 */
export const GRPCInferenceClient = makeGenericClientConstructor(
  GRPCInferenceService,
  'inference.GRPCInferenceService',
) as unknown as typeof GRPCInferenceServiceClient;

// ---------------------------------------------------------------------------------------------
// InferParameter helpers

export const boolParam = (value: boolean): InferParameter => ({ parameterChoice: { $case: 'boolParam', value } });
// 64-bit parameters are decimal strings in the generated types (jstype = JS_STRING: lossless).
export const int64Param = (value: number | bigint | string): InferParameter => ({
  parameterChoice: { $case: 'int64Param', value: int64Text(value) },
});
export const uint64Param = (value: number | bigint | string): InferParameter => ({
  parameterChoice: { $case: 'uint64Param', value: int64Text(value) },
});
function int64Text(value: number | bigint | string): string {
  return typeof value === 'number' ? BigInt(Math.trunc(value)).toString() : String(value);
}
export const doubleParam = (value: number): InferParameter => ({ parameterChoice: { $case: 'doubleParam', value } });
export const stringParam = (value: string): InferParameter => ({ parameterChoice: { $case: 'stringParam', value } });

/**
 * The value of a parameter whatever its kind; undefined when absent or unset. A 64-bit integer
 * parameter is a number: exact up to 2^53, the nearest double beyond (a `timeout` of 2^63-1 is
 * simply very long); the exact decimal string stays in the message for whoever needs it.
 */
export function paramValue(p: InferParameter | undefined): boolean | number | string | undefined {
  const c = p?.parameterChoice;
  if (c === undefined) return undefined;
  if (c.$case === 'int64Param' || c.$case === 'uint64Param') return Number(c.value);
  return c.value;
}
