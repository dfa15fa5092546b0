import {
  boolParam,
  doubleParam,
  type InferParameter,
  type InferTensorContents,
  int64Param,
  type ModelInferRequest,
  type ModelInferResponse,
  paramValue,
  stringParam,
} from '@hloserve/proto';
import type { Params, ParamValue, WireData, WireInferRequest, WireInferResponse } from '@hloserve/common/wire';
import { fromWireDatatype } from '../dtypes.js';
import { invalidArgument, quote } from '@hloserve/common/errors';

/**
 * What a message without parameters gets, shared: nothing on the request path writes into a
 * request's or response's parameters (frozen, so a write would throw, not leak into another
 * request), and one object fewer per tensor is less garbage per request at one caller.
 */
const NO_PARAMS: Params = Object.freeze({});
/** The response side's empty map: only read, by the encoder (see toGrpcResponse). */
const NO_PARAM_MAP: Map<string, InferParameter> = new Map();

function params(m: Map<string, InferParameter>): Params {
  if (m.size === 0) return NO_PARAMS;
  const out: Record<string, ParamValue> = {};
  for (const [k, v] of m) {
    const x = paramValue(v);
    if (x !== undefined) out[k] = x;
  }
  return out;
}

function toParamMap(p: Params): Map<string, InferParameter> {
  const entries = Object.entries(p);
  if (entries.length === 0) return NO_PARAM_MAP;
  const m = new Map<string, InferParameter>();
  for (const [k, v] of entries) {
    m.set(
      k,
      typeof v === 'boolean'
        ? boolParam(v)
        : typeof v === 'string'
          ? stringParam(v)
          : Number.isSafeInteger(v)
            ? int64Param(v)
            : doubleParam(v),
    );
  }
  return m;
}

const TYPED_FIELD: Record<string, keyof InferTensorContents> = {
  BOOL: 'boolContents',
  INT8: 'intContents',
  INT16: 'intContents',
  INT32: 'intContents',
  INT64: 'int64Contents',
  UINT8: 'uintContents',
  UINT16: 'uintContents',
  UINT32: 'uintContents',
  UINT64: 'uint64Contents',
  FP32: 'fp32Contents',
  FP64: 'fp64Contents',
  BYTES: 'bytesContents',
};
const SNAKE: Record<string, string> = {
  boolContents: 'bool_contents',
  intContents: 'int_contents',
  int64Contents: 'int64_contents',
  uintContents: 'uint_contents',
  uint64Contents: 'uint64_contents',
  fp32Contents: 'fp32_contents',
  fp64Contents: 'fp64_contents',
  bytesContents: 'bytes_contents',
};

const CONTENT_FIELDS = Object.keys(SNAKE) as (keyof InferTensorContents)[];
const NO_DATA: WireData = Object.freeze({ kind: 'none' });

/** `inputs[i] 'name'`: built only for an error message (quote is not free on every request). */
const inputField = (i: number, name: string): string => `inputs[${i}] ${quote(name)}`;

function typedData(c: InferTensorContents, datatype: string, i: number, name: string): WireData {
  let any = false;
  for (const k of CONTENT_FIELDS) if (c[k].length > 0) any = true;
  if (!any) return NO_DATA;
  const field = inputField(i, name);
  const used = CONTENT_FIELDS.filter((k) => c[k].length > 0);
  const want = TYPED_FIELD[datatype];
  if (!want)
    throw invalidArgument(`${field}: datatype ${quote(datatype)} has no typed contents; send raw_input_contents`);
  if (used.length > 1 || used[0] !== want) {
    throw invalidArgument(
      `${field}: ${datatype} data belongs in contents.${SNAKE[want]}, got ${used.map((k) => SNAKE[k]).join(', ')}`,
    );
  }
  return { kind: 'typed', values: c[want], field: `contents.${SNAKE[want]}` };
}

/**
 * ModelInferRequest -> the codec's form. raw_input_contents are matched to the inputs that carry
 * neither shared-memory parameters nor typed contents, in order (tritonclient omits the raw entry
 * of a shared-memory input, as Triton expects).
 */
export function fromGrpcRequest(r: ModelInferRequest): WireInferRequest {
  const raws = r.rawInputContents;
  let nextRaw = 0;
  const inputs = r.inputs.map((t, i) => {
    const p = params(t.parameters);
    let data: WireData = t.contents ? typedData(t.contents, t.datatype, i, t.name) : NO_DATA;
    if (raws.length > 0) {
      if (data.kind !== 'none')
        throw invalidArgument(`${inputField(i, t.name)}: contents must not be given when raw_input_contents is used`);
      if (p.shared_memory_region === undefined) {
        if (nextRaw >= raws.length)
          throw invalidArgument(`raw_input_contents has ${raws.length} entries, fewer than the inputs that need one`);
        data = { kind: 'raw', bytes: raws[nextRaw++]! };
      }
    }
    if (fromWireDatatype(t.datatype) === undefined)
      throw invalidArgument(`${inputField(i, t.name)}: unknown datatype ${quote(t.datatype)}`);
    return { name: t.name, datatype: t.datatype, shape: t.shape, parameters: p, data };
  });
  if (nextRaw !== raws.length) {
    throw invalidArgument(`raw_input_contents has ${raws.length} entries but only ${nextRaw} inputs take raw data`);
  }
  return {
    modelName: r.modelName,
    modelVersion: r.modelVersion,
    id: r.id,
    parameters: params(r.parameters),
    inputs,
    outputs: r.outputs.map((o) => ({ name: o.name, parameters: params(o.parameters) })),
  };
}

/** The codec's response -> ModelInferResponse; every output gets a raw entry (empty for shm). */
export function toGrpcResponse(w: WireInferResponse): ModelInferResponse {
  return {
    modelName: w.modelName,
    modelVersion: w.modelVersion,
    id: w.id,
    parameters: NO_PARAM_MAP,
    outputs: w.outputs.map((o) => ({
      name: o.name,
      datatype: o.datatype,
      // Encoded at once and dropped: the codec's shape is read, never kept or changed.
      shape: o.shape as number[],
      parameters: toParamMap(o.parameters),
      contents: undefined,
    })),
    rawOutputContents: w.outputs.map((o) => o.data ?? new Uint8Array(0)),
  };
}
