/**
 * Turning the requests of one dispatch into the executable's inputs at the compiled batch size,
 * and the outputs back into per-request tensors. Batch axes are indices into the WIRE shape
 * (row-major; the manifest letters reversed), so a batch-last manifest tensor ("whcn") has its
 * batch on wire axis 0 and batching is plain byte concatenation: one allocation and one memcpy per
 * request, no per-element work. Other axes are handled with strided block copies.
 */
import { fixedElementByteSize } from '../dtypes.js';
import { ServeError, invalidArgument } from '@hloserve/common/errors';
import type { HostTensor } from '../tensor.js';

/** Batch axis per tensor in executable order, wire indexing; null for tensors without one. */
export type BatchAxes = readonly (number | null)[];

function product(dims: readonly number[], from: number, to: number): number {
  let n = 1;
  for (let i = from; i < to; i++) n *= dims[i]!;
  return n;
}

function elementBytes(t: HostTensor, what: string): number {
  const size = fixedElementByteSize(t.dtype);
  // BYTES elements have no fixed size, so rows cannot be located by offset arithmetic.
  if (size === null) throw invalidArgument(`${what} '${t.name}': BYTES tensors cannot carry a batch axis`);
  return size;
}

/**
 * Rows a request carries: the extent of the first batched input (1 when no input is batched).
 * Every batched input must agree, else the request is malformed.
 */
export function requestRows(inputs: readonly HostTensor[], batchAxes: BatchAxes): number {
  if (inputs.length !== batchAxes.length) {
    throw invalidArgument(`expected ${batchAxes.length} inputs, got ${inputs.length}`);
  }
  let rows: number | null = null;
  for (let i = 0; i < inputs.length; i++) {
    const axis = batchAxes[i];
    if (axis === null || axis === undefined) continue;
    const t = inputs[i]!;
    if (axis < 0 || axis >= t.shape.length) {
      throw invalidArgument(`input '${t.name}': batch axis ${axis} outside its rank ${t.shape.length}`);
    }
    const extent = t.shape[axis]!;
    if (rows === null) rows = extent;
    else if (extent !== rows) {
      throw invalidArgument(`input '${t.name}': batch extent ${extent} differs from the other inputs (${rows})`);
    }
  }
  return rows ?? 1;
}

/**
 * A key equal for two requests exactly when their inputs can be concatenated: same dtypes and
 * same extents on every axis except the batch axis. Queues coalesce only runs of equal keys, so a
 * request of a different shape (e.g. another input_shapes variant) can never break a batch.
 */
export function coalesceKey(inputs: readonly HostTensor[], batchAxes: BatchAxes): string {
  let key = '';
  for (let i = 0; i < inputs.length; i++) {
    const t = inputs[i]!;
    const axis = batchAxes[i];
    key += `${t.dtype}[`;
    for (let d = 0; d < t.shape.length; d++) key += (d === axis ? '*' : String(t.shape[d])) + ',';
    key += '];';
  }
  return key;
}

/**
 * coalesceKey with its last answer kept. A model's requests nearly always share one shape, and
 * comparing a few numbers costs less than building the string again for every request.
 */
export class CoalesceKeyMemo {
  #axes: BatchAxes | null = null;
  #dtypes: string[] = [];
  #shapes: number[][] = [];
  #key = '';

  keyOf(inputs: readonly HostTensor[], batchAxes: BatchAxes): string {
    if (batchAxes === this.#axes && this.#matches(inputs, batchAxes)) return this.#key;
    this.#key = coalesceKey(inputs, batchAxes);
    this.#axes = batchAxes;
    this.#dtypes = inputs.map((t) => t.dtype);
    this.#shapes = inputs.map((t) => [...t.shape]);
    return this.#key;
  }

  #matches(inputs: readonly HostTensor[], batchAxes: BatchAxes): boolean {
    if (inputs.length !== this.#shapes.length) return false;
    for (let i = 0; i < inputs.length; i++) {
      const t = inputs[i]!;
      const shape = this.#shapes[i]!;
      if (t.dtype !== this.#dtypes[i] || t.shape.length !== shape.length) return false;
      const axis = batchAxes[i];
      for (let d = 0; d < shape.length; d++) if (d !== axis && t.shape[d] !== shape[d]) return false;
    }
    return true;
  }
}

/** Null when the byte length matches the shape, else the complaint. */
function lengthMismatch(t: HostTensor, elem: number, what: string): string | null {
  const expected = product(t.shape, 0, t.shape.length) * elem;
  return t.data.byteLength === expected
    ? null
    : `${what} '${t.name}': ${t.data.byteLength} bytes, shape needs ${expected}`;
}

/** Where a coalesced batch's bytes go: a new buffer, or one reused (BatchBufferPool). */
export type BatchAllocator = (bytes: number) => Buffer;

const freshBuffer: BatchAllocator = (bytes) => Buffer.allocUnsafe(bytes);

function concatAlongAxis(
  tensors: readonly HostTensor[],
  axis: number,
  batchSize: number,
  alloc: BatchAllocator,
): HostTensor {
  const first = tensors[0]!;
  const elem = elementBytes(first, 'input');
  const rank = first.shape.length;
  let total = 0;
  for (const t of tensors) {
    if (t.dtype !== first.dtype || t.shape.length !== rank) {
      throw invalidArgument(`input '${first.name}': dtype or rank differs between coalesced requests`);
    }
    for (let d = 0; d < rank; d++) {
      if (d !== axis && t.shape[d] !== first.shape[d]) {
        throw invalidArgument(`input '${first.name}': extents differ between coalesced requests`);
      }
    }
    const bad = lengthMismatch(t, elem, 'input');
    if (bad !== null) throw invalidArgument(bad);
    total += t.shape[axis]!;
  }
  if (total > batchSize) {
    throw new ServeError('HLO_ERR_INTERNAL', `batch of ${total} rows planned into compiled size ${batchSize}`);
  }
  const outer = product(first.shape, 0, axis);
  // Bytes of one batch row inside one outer slice.
  const inner = product(first.shape, axis + 1, rank) * elem;
  // Every byte is written below (rows, then zero padding), so a reused buffer carries nothing over.
  const out = alloc(outer * batchSize * inner);
  if (outer === 1) {
    let offset = 0;
    for (const t of tensors) {
      out.set(t.data, offset);
      offset += t.data.byteLength;
    }
    out.fill(0, offset);
  } else {
    const stride = batchSize * inner;
    let rowOffset = 0;
    for (const t of tensors) {
      const block = t.shape[axis]! * inner;
      for (let o = 0; o < outer; o++) {
        out.set(t.data.subarray(o * block, (o + 1) * block), o * stride + rowOffset * inner);
      }
      rowOffset += t.shape[axis]!;
    }
    if (total < batchSize) for (let o = 0; o < outer; o++) out.fill(0, o * stride + total * inner, (o + 1) * stride);
  }
  const shape = [...first.shape];
  shape[axis] = batchSize;
  return { name: first.name, dtype: first.dtype, shape, data: out };
}

/**
 * Executable inputs for one dispatch. `requests[j]` holds request j's inputs in executable order.
 * Batched inputs are concatenated along their axis and zero-padded to `batchSize`; unbatched ones
 * come from the first request (the scheduler only coalesces models whose inputs are all batched,
 * so this matters only for a lone request being padded). A lone request that already fills the
 * compiled size is passed through untouched. `batchSize` 0 (any-batch module) means "no padding".
 * Gathered inputs are written into buffers from `alloc` (fresh ones by default).
 */
export function coalesceInputs(
  requests: readonly (readonly HostTensor[])[],
  batchAxes: BatchAxes,
  batchSize: number,
  alloc: BatchAllocator = freshBuffer,
): HostTensor[] {
  const first = requests[0];
  if (first === undefined) throw new Error('coalesceInputs: no requests');
  const rows = requests.map((r) => requestRows(r, batchAxes));
  const total = rows.reduce((a, b) => a + b, 0);
  const target = batchSize === 0 ? total : batchSize;
  if (requests.length === 1 && rows[0] === target) return [...first];
  return batchAxes.map((axis, i) =>
    axis === null
      ? first[i]!
      : concatAlongAxis(
          requests.map((r) => r[i]!),
          axis,
          target,
          alloc,
        ),
  );
}

/** `t`'s shape with `rows` on `axis`. */
function shapeWithRows(t: HostTensor, axis: number, rows: number): readonly number[] {
  const shape = [...t.shape];
  shape[axis] = rows;
  return shape;
}

function sliceAlongAxis(
  t: HostTensor,
  axis: number,
  offset: number,
  rows: number,
  shape: readonly number[],
): HostTensor {
  const elem = elementBytes(t, 'output');
  const rank = t.shape.length;
  const outer = product(t.shape, 0, axis);
  const inner = product(t.shape, axis + 1, rank) * elem;
  const extent = t.shape[axis]!;
  if (outer === 1) {
    // A view: requests share the executor's output buffer and nothing is copied.
    const data = t.data.subarray(offset * inner, (offset + rows) * inner);
    return { name: t.name, dtype: t.dtype, shape, data };
  }
  const block = rows * inner;
  const data = Buffer.allocUnsafe(outer * block);
  for (let o = 0; o < outer; o++) {
    const src = o * extent * inner + offset * inner;
    data.set(t.data.subarray(src, src + block), o * block);
  }
  return { name: t.name, dtype: t.dtype, shape, data };
}

/**
 * Per-request outputs from one execution: request j gets rows [Σ rows<j, Σ rows<=j) of every
 * batched output (padding rows are dropped); unbatched outputs are shared by all requests.
 */
export function sliceOutputs(
  outputs: readonly HostTensor[],
  batchAxes: BatchAxes,
  rows: readonly number[],
): HostTensor[][] {
  if (outputs.length !== batchAxes.length) {
    throw new ServeError(
      'HLO_ERR_RUNTIME',
      `executable returned ${outputs.length} outputs, expected ${batchAxes.length}`,
    );
  }
  const total = rows.reduce((a, b) => a + b, 0);
  for (let i = 0; i < outputs.length; i++) {
    const axis = batchAxes[i];
    if (axis === null || axis === undefined) continue;
    const t = outputs[i]!;
    if (axis >= t.shape.length || t.shape[axis]! < total) {
      throw new ServeError(
        'HLO_ERR_RUNTIME',
        `output '${t.name}' shape [${t.shape.join(',')}] cannot hold ${total} rows on axis ${axis}`,
      );
    }
    const bad = lengthMismatch(t, elementBytes(t, 'output'), 'output');
    if (bad !== null) throw new ServeError('HLO_ERR_RUNTIME', bad);
  }
  if (rows.length === 1) {
    const only = outputs.every((t, i) => batchAxes[i] === null || t.shape[batchAxes[i]!] === rows[0]);
    if (only) return [[...outputs]];
  }
  const result: HostTensor[][] = [];
  // Requests of one batch mostly carry the same rows, so they share one (never mutated) shape array
  // per output instead of a copy each.
  const shapes: (readonly number[])[] = [];
  let shapeRows = -1;
  let offset = 0;
  for (const r of rows) {
    if (r !== shapeRows) {
      shapeRows = r;
      for (let i = 0; i < outputs.length; i++) {
        const axis = batchAxes[i];
        shapes[i] = axis === null || axis === undefined ? outputs[i]!.shape : shapeWithRows(outputs[i]!, axis, r);
      }
    }
    const mine: HostTensor[] = new Array(outputs.length);
    for (let i = 0; i < outputs.length; i++) {
      const t = outputs[i]!;
      const axis = batchAxes[i];
      mine[i] = axis === null || axis === undefined ? t : sliceAlongAxis(t, axis, offset, r, shapes[i]!);
    }
    result.push(mine);
    offset += r;
  }
  return result;
}
