import { fixedElementByteSize, fromWireDatatype, toWireDatatype } from '../dtypes.js';
import { invalidArgument, quote, shapeText } from '@hloserve/common/errors';
import type { SharedMemoryRegistry } from '../transports/shared-memory.js';
import type { HostTensor } from '../tensor.js';
import { countBytesElements } from './bytes-tensor.js';
import type { IoTensorSpec, ModelIO } from './model-io.js';
import { typedToBytes } from './typed-values.js';
import { noParams, type Params, type WireInferRequest, type WireInput } from '@hloserve/common/wire';

export interface ShmTarget {
  readonly region: string;
  readonly offset: number;
  readonly byteSize: number;
}

export interface RequestedOutput {
  readonly index: number; // position among the model's outputs
  readonly spec: IoTensorSpec;
  readonly shm: ShmTarget | null;
  readonly parameters: Params;
}

export interface DecodedRequest {
  /**
   * Inputs in the model's order, with their bytes (views into the request where possible). An
   * input in shared memory has empty bytes here until readSharedInputs copies it in.
   */
  readonly inputs: readonly HostTensor[];
  /** Extent of the batch axis (1 for models without one). */
  readonly rows: number;
  readonly outputs: readonly RequestedOutput[];
  /** Inputs still to be copied out of shared memory (already bounds-checked); empty for most requests. */
  readonly sharedInputs: readonly SharedInput[];
}

export interface SharedInput {
  readonly index: number; // position among the model's inputs
  readonly target: ShmTarget;
  readonly elements: number;
  readonly field: string;
}

const NO_SHARED_INPUTS: readonly SharedInput[] = Object.freeze([]);
const PENDING = new Uint8Array(0);

const MAX_ELEMENTS = 2 ** 40;

function intParam(p: Params, key: string, field: string): number | undefined {
  const v = p[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
    throw invalidArgument(`${field}: parameter '${key}' must be a non-negative integer`);
  }
  return v;
}

/** Reads the shared_memory_* parameters of a tensor; null when it carries none. */
export function shmTarget(p: Params, field: string): ShmTarget | null {
  const region = p.shared_memory_region;
  if (region === undefined) {
    if (p.shared_memory_byte_size !== undefined || p.shared_memory_offset !== undefined) {
      throw invalidArgument(`${field}: shared_memory_byte_size/offset given without shared_memory_region`);
    }
    return null;
  }
  const byteSize = intParam(p, 'shared_memory_byte_size', field);
  const offset = intParam(p, 'shared_memory_offset', field) ?? 0;
  if (typeof region !== 'string' || region === '')
    throw invalidArgument(`${field}: shared_memory_region must be a non-empty string`);
  if (byteSize === undefined) throw invalidArgument(`${field}: shared_memory_region needs shared_memory_byte_size`);
  return { region, offset, byteSize };
}

function checkShape(spec: IoTensorSpec, input: WireInput, field: string): number {
  const shape = input.shape;
  if (shape.length !== spec.dims.length) {
    throw invalidArgument(
      `${field}: shape ${shapeText(shape)} has rank ${shape.length}, the model expects rank ${spec.dims.length} (${shapeText(spec.dims)})`,
    );
  }
  let n = 1;
  shape.forEach((d, i) => {
    if (!Number.isSafeInteger(d) || d < 0)
      throw invalidArgument(`${field}: shape[${i}] = ${quote(d)} is not a valid extent`);
    if (spec.dims[i] !== -1 && d !== spec.dims[i]) {
      throw invalidArgument(
        `${field}: shape ${shapeText(shape)} does not match the model's ${shapeText(spec.dims)} at axis ${i}`,
      );
    }
    if (i === spec.batchAxis && d === 0) throw invalidArgument(`${field}: the batch axis must have at least one row`);
    n *= d;
  });
  if (n > MAX_ELEMENTS) throw invalidArgument(`${field}: ${n} elements is too large`);
  return n;
}

function inputBytes(
  spec: IoTensorSpec,
  input: WireInput,
  elements: number,
  shm: SharedMemoryRegistry | null,
  field: string,
): Uint8Array | ShmTarget {
  const target = shmTarget(input.parameters, field);
  let bytes: Uint8Array;
  if (target) {
    if (input.data.kind !== 'none') throw invalidArgument(`${field}: data given both inline and in shared memory`);
    if (!shm) throw invalidArgument(`${field}: shared memory is disabled on this server`);
    shm.check(target.region, target.offset, target.byteSize);
    const size = fixedElementByteSize(spec.dtype);
    if (size !== null && target.byteSize !== elements * size) {
      throw invalidArgument(
        `${field}: expected ${elements * size} bytes for ${toWireDatatype(spec.dtype)}${shapeText(input.shape)}, got ${target.byteSize}`,
      );
    }
    return target;
  } else if (input.data.kind === 'raw') {
    bytes = input.data.bytes;
  } else if (input.data.kind === 'typed') {
    bytes = typedToBytes(spec.dtype, input.data.values, `${field}.${input.data.field}`);
  } else {
    throw invalidArgument(`${field}: no data (neither raw contents, typed contents nor shared memory)`);
  }
  checkBytes(spec, input.shape, elements, bytes, field);
  return bytes;
}

function checkBytes(
  spec: IoTensorSpec,
  shape: readonly number[],
  elements: number,
  bytes: Uint8Array,
  field: string,
): void {
  const size = fixedElementByteSize(spec.dtype);
  if (size === null) {
    const count = countBytesElements(bytes, field);
    if (count !== elements)
      throw invalidArgument(`${field}: ${count} BYTES elements for shape ${shapeText(shape)} (${elements})`);
  } else if (bytes.byteLength !== elements * size) {
    throw invalidArgument(
      `${field}: expected ${elements * size} bytes for ${toWireDatatype(spec.dtype)}${shapeText(shape)}, got ${bytes.byteLength}`,
    );
  }
}

/**
 * Resolves the request's shared-memory inputs (views of the mapped regions, or copies made on the
 * native addon's threads where a region is not mapped) and puts their bytes into `decoded.inputs`, which this request owns (decodeRequest built it). Call only when
 * `decoded.sharedInputs` is not empty, and before the inputs are used.
 */
export async function readSharedInputs(
  model: ModelIO,
  decoded: DecodedRequest,
  shm: SharedMemoryRegistry,
): Promise<void> {
  const inputs = decoded.inputs as HostTensor[];
  const copied = await Promise.all(
    decoded.sharedInputs.map((s) => shm.read(s.target.region, s.target.offset, s.target.byteSize)),
  );
  decoded.sharedInputs.forEach((s, k) => {
    const t = inputs[s.index]!;
    const data = copied[k]!;
    checkBytes(model.inputs[s.index]!, t.shape, s.elements, data, s.field);
    inputs[s.index] = { name: t.name, dtype: t.dtype, shape: t.shape, data };
  });
}

/**
 * After the execution that read them: throws when a shared-memory input's mapping was truncated
 * under the copy (it read zeros). Views that are not mappings pass.
 */
export function assertSharedInputsIntact(decoded: DecodedRequest, shm: SharedMemoryRegistry): void {
  for (const s of decoded.sharedInputs) shm.assertIntact(s.target.region, decoded.inputs[s.index]!.data);
}

/**
 * Validates a request against the model (names, datatypes, ranks, fixed extents, sizes, batch
 * rows) and resolves its data, before anything is queued: a bad request can never poison a batch.
 */
export function decodeRequest(model: ModelIO, req: WireInferRequest, shm: SharedMemoryRegistry | null): DecodedRequest {
  const l = lookups(model);
  const tensors: (HostTensor | undefined)[] = new Array(model.inputs.length);
  let shared: SharedInput[] | null = null;
  let rows: number | null = null;
  for (let k = 0; k < req.inputs.length; k++) {
    const input = req.inputs[k]!;
    const idx = l.byName.get(input.name);
    if (idx === undefined) {
      throw invalidArgument(
        `unexpected inference input ${quote(input.name)} for model '${model.name}' (expects: ${model.inputs.map((s) => s.name).join(', ')})`,
      );
    }
    const field = fieldName(l, k, idx, input.name);
    if (tensors[idx]) throw invalidArgument(`${field}: input given twice`);
    const spec = model.inputs[idx]!;
    const dtype = fromWireDatatype(input.datatype);
    if (dtype !== spec.dtype) {
      throw invalidArgument(
        `${field}: datatype ${quote(input.datatype)} does not match the model's ${toWireDatatype(spec.dtype)}`,
      );
    }
    const elements = checkShape(spec, input, field);
    if (spec.batchAxis !== null) {
      const r = input.shape[spec.batchAxis]!;
      if (rows !== null && r !== rows)
        throw invalidArgument(`${field}: batch of ${r} rows disagrees with ${rows} in another input`);
      rows = r;
    }
    const bytes = inputBytes(spec, input, elements, shm, field);
    let data: Uint8Array;
    if (bytes instanceof Uint8Array) data = bytes;
    else {
      (shared ??= []).push({ index: idx, target: bytes, elements, field });
      data = PENDING;
    }
    tensors[idx] = { name: spec.name, dtype: spec.dtype, shape: input.shape, data };
  }
  const missing = model.inputs.filter((_, i) => !tensors[i]).map((s) => s.name);
  if (missing.length)
    throw invalidArgument(`missing inference input(s) for model '${model.name}': ${missing.join(', ')}`);
  const r: number = rows ?? 1;
  if (r > model.maxRows) {
    throw invalidArgument(
      `a batch of ${r} rows exceeds the largest batch model '${model.name}' accepts (${model.maxRows})`,
    );
  }
  return {
    inputs: tensors as HostTensor[],
    rows: r,
    outputs: selectOutputs(model, req),
    sharedInputs: shared ?? NO_SHARED_INPUTS,
  };
}

/** What decoding looks up per model, built once per ModelIO instead of once per request. */
interface ModelLookups {
  readonly byName: ReadonlyMap<string, number>;
  /** fields[k][idx]: how errors name request input k when it is the model's input idx. */
  readonly fields: string[][];
  /** Every output, inline: what a request that names no outputs gets (shared, never mutated). */
  readonly allOutputs: readonly RequestedOutput[];
}

const LOOKUPS = new WeakMap<ModelIO, ModelLookups>();

function lookups(model: ModelIO): ModelLookups {
  let l = LOOKUPS.get(model);
  if (l === undefined) {
    l = {
      byName: new Map(model.inputs.map((s, i) => [s.name, i])),
      fields: [],
      allOutputs: Object.freeze(
        model.outputs.map((spec, index) => Object.freeze({ index, spec, shm: null, parameters: Object.freeze({}) })),
      ),
    };
    LOOKUPS.set(model, l);
  }
  return l;
}

/**
 * `inputs[k] 'name'`, built once per position and input rather than once per request (only errors
 * read it, but it is passed down every path that can raise one).
 */
function fieldName(l: ModelLookups, k: number, idx: number, name: string): string {
  const row = (l.fields[k] ??= []);
  return (row[idx] ??= `inputs[${k}] ${quote(name)}`);
}

function selectOutputs(model: ModelIO, req: WireInferRequest): readonly RequestedOutput[] {
  const l = lookups(model);
  if (req.outputs.length === 0) return l.allOutputs;
  // Loops rather than a Set, findIndex and a record per output: an output asked for without
  // parameters gets the model's shared record, as a request that names no outputs does.
  const selected = new Array<RequestedOutput>(req.outputs.length);
  for (let k = 0; k < req.outputs.length; k++) {
    const o = req.outputs[k]!;
    let index = -1;
    for (let i = 0; i < model.outputs.length; i++) {
      if (model.outputs[i]!.name === o.name) {
        index = i;
        break;
      }
    }
    if (index < 0) {
      throw invalidArgument(
        `unexpected inference output ${quote(o.name)} for model '${model.name}' (has: ${model.outputs.map((s) => s.name).join(', ')})`,
      );
    }
    for (let j = 0; j < k; j++)
      if (req.outputs[j]!.name === o.name) throw invalidArgument(`outputs[${k}] ${quote(o.name)} requested twice`);
    selected[k] = noParams(o.parameters)
      ? l.allOutputs[index]!
      : {
          index,
          spec: model.outputs[index]!,
          shm: shmTarget(o.parameters, `outputs[${k}] ${quote(o.name)}`),
          parameters: o.parameters,
        };
  }
  return selected;
}
