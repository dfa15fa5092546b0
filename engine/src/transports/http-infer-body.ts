import { invalidArgument, quote, ServeError } from '@hloserve/common/errors';
import { fromWireDatatype } from '../dtypes.js';
import { bytesToTyped } from '../codec/typed-values.js';
import { scanInferJson } from '../codec/json-skeleton.js';
import { decodeJsonTensor, shapeElements } from '../codec/json-tensor.js';
import type {
  Params,
  ParamValue,
  WireData,
  WireInferRequest,
  WireInferResponse,
  WireInput,
} from '@hloserve/common/wire';

const HEADER_LENGTH = 'inference-header-content-length';

function params(v: unknown, field: string): Params {
  if (v === undefined || v === null) return {};
  if (typeof v !== 'object' || Array.isArray(v)) throw invalidArgument(`${field} must be an object`);
  const out: Record<string, ParamValue> = {};
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
    if (typeof x !== 'string' && typeof x !== 'number' && typeof x !== 'boolean') {
      throw invalidArgument(`${field}.${quote(k)} must be a string, number or boolean`);
    }
    out[k] = x;
  }
  return out;
}

/**
 * Parses a KServe V2 HTTP infer body: JSON, or JSON followed by binary tensors (Triton's binary
 * tensor extension, with the JSON length in Inference-Header-Content-Length). JSON tensor data
 * is decoded straight into buffers of the declared datatype and shape (decodeJsonTensor); only
 * the small rest of the document becomes JS values. `maxJsonBytes` bounds the JSON part.
 */
export function parseHttpInfer(
  modelName: string,
  modelVersion: string,
  body: Uint8Array,
  headerLength: string | undefined,
  maxJsonBytes = Number.MAX_SAFE_INTEGER,
): WireInferRequest {
  let jsonEnd = body.byteLength;
  if (headerLength !== undefined) {
    const n = Number(headerLength);
    if (!Number.isSafeInteger(n) || n < 0 || n > body.byteLength) {
      throw invalidArgument(`${HEADER_LENGTH} ${quote(headerLength)} does not fit the ${body.byteLength}-byte body`);
    }
    jsonEnd = n;
  }
  if (jsonEnd > maxJsonBytes) {
    throw new ServeError(
      'HLO_ERR_MESSAGE_TOO_LARGE',
      `JSON of ${jsonEnd} bytes exceeds the ${maxJsonBytes}-byte JSON limit; send large tensors as binary data`,
    );
  }
  const { doc, data: dataRanges } = scanInferJson(body, jsonEnd);
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc))
    throw invalidArgument('request body must be a JSON object');
  const d = doc as Record<string, unknown>;
  if (!Array.isArray(d.inputs)) throw invalidArgument("request needs an 'inputs' array");
  let at = jsonEnd;
  const inputs: WireInput[] = d.inputs.map((raw: unknown, i: number) => {
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
      throw invalidArgument(`inputs[${i}] must be an object`);
    const t = raw as Record<string, unknown>;
    if (typeof t.name !== 'string') throw invalidArgument(`inputs[${i}].name must be a string`);
    const field = `inputs[${i}] ${quote(t.name)}`;
    if (typeof t.datatype !== 'string') throw invalidArgument(`${field}: datatype must be a string`);
    if (!Array.isArray(t.shape)) throw invalidArgument(`${field}: shape must be an array of integers`);
    shapeElements(t.shape, field);
    const shape = t.shape as number[];
    const p = params(t.parameters, `${field}: parameters`);
    let data: WireData;
    const size = p.binary_data_size;
    const range = dataRanges.get(i);
    if (size !== undefined) {
      if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0)
        throw invalidArgument(`${field}: parameters.binary_data_size must be a non-negative integer`);
      if (range !== undefined) throw invalidArgument(`${field}: data given both as JSON and as binary data`);
      if (at + size > body.byteLength)
        throw invalidArgument(`${field}: binary_data_size ${size} runs past the end of the body`);
      data = { kind: 'raw', bytes: body.subarray(at, at + size) };
      at += size;
    } else if (range !== undefined) {
      data = { kind: 'raw', bytes: decodeJsonTensor(body, range.start, range.end, t.datatype, shape, `${field}.data`) };
    } else {
      data = { kind: 'none' };
    }
    const { binary_data_size: _ignored, ...rest } = p;
    return { name: t.name, datatype: t.datatype, shape, parameters: rest, data };
  });
  if (at !== body.byteLength)
    throw invalidArgument(`${body.byteLength - at} bytes of binary data are not claimed by any input`);
  const outputs = d.outputs === undefined ? [] : d.outputs;
  if (!Array.isArray(outputs)) throw invalidArgument("'outputs' must be an array");
  return {
    modelName,
    modelVersion,
    id: typeof d.id === 'string' ? d.id : '',
    parameters: params(d.parameters, 'parameters'),
    inputs,
    outputs: outputs.map((o: unknown, i: number) => {
      if (typeof o !== 'object' || o === null || typeof (o as { name?: unknown }).name !== 'string') {
        throw invalidArgument(`outputs[${i}] must be an object with a name`);
      }
      const x = o as { name: string; parameters?: unknown };
      return { name: x.name, parameters: params(x.parameters, `outputs[${i}].parameters`) };
    }),
  };
}

export interface HttpBody {
  readonly body: Buffer;
  readonly contentType: string;
  readonly headerLength: number | null;
}

/** Encodes a response: binary for outputs that asked for it (tritonclient's default), JSON otherwise. */
export function encodeHttpInfer(req: WireInferRequest, res: WireInferResponse): HttpBody {
  const wantBinary = (name: string): boolean => {
    const o = req.outputs.find((x) => x.name === name);
    const p = o?.parameters.binary_data;
    if (typeof p === 'boolean') return p;
    return req.parameters.binary_data_output === true;
  };
  const chunks: Uint8Array[] = [];
  const outputs = res.outputs.map((o) => {
    const base = { name: o.name, datatype: o.datatype, shape: o.shape };
    if (o.data === null) return { ...base, parameters: o.parameters };
    if (wantBinary(o.name)) {
      chunks.push(o.data);
      return { ...base, parameters: { ...o.parameters, binary_data_size: o.data.byteLength } };
    }
    const dtype = fromWireDatatype(o.datatype);
    if (!dtype) throw new ServeError('HLO_ERR_INTERNAL', `output ${o.name} has unknown datatype ${o.datatype}`);
    const hasParams = Object.keys(o.parameters).length > 0;
    return { ...base, ...(hasParams ? { parameters: o.parameters } : {}), data: bytesToTyped(dtype, o.data) };
  });
  const json = Buffer.from(
    JSON.stringify({
      model_name: res.modelName,
      model_version: res.modelVersion,
      ...(res.id ? { id: res.id } : {}),
      outputs,
    }),
  );
  if (chunks.length === 0) return { body: json, contentType: 'application/json', headerLength: null };
  return {
    body: Buffer.concat([json, ...chunks]),
    contentType: 'application/octet-stream',
    headerLength: json.byteLength,
  };
}
