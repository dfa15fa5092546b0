import { invalidArgument, quote, ServeError } from '@hloserve/common/errors';
import { fromWireDatatype } from '../dtypes.js';
import { bytesToTyped } from '../codec/typed-values.js';
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
      throw invalidArgument(`${field}.${k} must be a string, number or boolean`);
    }
    out[k] = x;
  }
  return out;
}

function flatten(v: unknown, out: unknown[]): unknown[] {
  if (Array.isArray(v)) for (const x of v) flatten(x, out);
  else out.push(v);
  return out;
}

/**
 * Parses a KServe V2 HTTP infer body: JSON, or JSON followed by binary tensors (Triton's binary
 * tensor extension, with the JSON length in Inference-Header-Content-Length).
 */
export function parseHttpInfer(
  modelName: string,
  modelVersion: string,
  body: Buffer,
  headerLength: string | undefined,
): WireInferRequest {
  let jsonEnd = body.byteLength;
  if (headerLength !== undefined) {
    const n = Number(headerLength);
    if (!Number.isSafeInteger(n) || n < 0 || n > body.byteLength) {
      throw invalidArgument(`${HEADER_LENGTH} ${quote(headerLength)} does not fit the ${body.byteLength}-byte body`);
    }
    jsonEnd = n;
  }
  let doc: unknown;
  try {
    doc = JSON.parse(body.subarray(0, jsonEnd).toString('utf8'));
  } catch (err) {
    throw invalidArgument(`request body is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc))
    throw invalidArgument('request body must be a JSON object');
  const d = doc as Record<string, unknown>;
  if (!Array.isArray(d.inputs)) throw invalidArgument("request needs an 'inputs' array");
  let at = jsonEnd;
  const inputs: WireInput[] = d.inputs.map((raw: unknown, i: number) => {
    const field = `inputs[${i}]`;
    if (typeof raw !== 'object' || raw === null) throw invalidArgument(`${field} must be an object`);
    const t = raw as Record<string, unknown>;
    if (typeof t.name !== 'string') throw invalidArgument(`${field}.name must be a string`);
    if (typeof t.datatype !== 'string') throw invalidArgument(`${field}.datatype must be a string`);
    if (!Array.isArray(t.shape) || !t.shape.every((x) => typeof x === 'number'))
      throw invalidArgument(`${field}.shape must be an array of integers`);
    const p = params(t.parameters, `${field}.parameters`);
    let data: WireData;
    const size = p.binary_data_size;
    if (size !== undefined) {
      if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0)
        throw invalidArgument(`${field}.parameters.binary_data_size must be a non-negative integer`);
      if (at + size > body.byteLength)
        throw invalidArgument(`${field}: binary_data_size ${size} runs past the end of the body`);
      data = { kind: 'raw', bytes: body.subarray(at, at + size) };
      at += size;
    } else if (t.data !== undefined) {
      const values = flatten(t.data, []);
      // BOOL/BYTES/FP16 handling lives in the codec; BYTES may arrive as strings here.
      data = { kind: 'typed', values, field: 'data' };
    } else {
      data = { kind: 'none' };
    }
    const { binary_data_size: _ignored, ...rest } = p;
    return { name: t.name, datatype: t.datatype, shape: t.shape as number[], parameters: rest, data };
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
