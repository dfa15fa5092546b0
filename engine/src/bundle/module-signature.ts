/**
 * Checks a text module's `@main` against what the server will pass it: the executable inputs in
 * manifest order, then the weights in argument_order, returning the executable outputs. The
 * reference left this as a no-op seam and found mismatches at the first request (or never, when
 * shapes happened to have the same byte size); here they are load errors naming both sides.
 * Bytecode modules cannot be read without MLIR, so the runtime checks them when it compiles.
 */
import type { DType } from '@hloserve/native/dtype';
import type { ProgramSignature, TensorType } from '@hloserve/native/mlir-signature';
import { bundleError } from './bundle-error.js';
import type { InputShapeVariant, Manifest } from './manifest.js';
import { ANY_BATCH } from './module-files.js';
import type { SafetensorsEntry } from './safetensors.js';
import { VARIABLE_DIM } from './tensor-spec.js';

const MLIR_ELEMENT: Readonly<Record<DType, string>> = {
  bool: 'i1',
  i8: 'i8',
  i16: 'i16',
  i32: 'i32',
  i64: 'i64',
  u8: 'ui8',
  u16: 'ui16',
  u32: 'ui32',
  u64: 'ui64',
  f16: 'f16',
  bf16: 'bf16',
  f32: 'f32',
  f64: 'f64',
};

/** `tensor<8x784xf32>`, with `?` for an unknown extent, as MLIR prints it. */
export function mlirTensorType(t: TensorType): string {
  const dims = t.shape.map((d) => (d === VARIABLE_DIM ? '?' : String(d)));
  return `tensor<${[...dims, MLIR_ELEMENT[t.dtype]].join('x')}>`;
}

/** -1 on either side matches anything: a variable manifest axis, or a dynamic module dim. */
export function tensorTypeMatches(expected: TensorType, actual: TensorType): boolean {
  if (expected.dtype !== actual.dtype || expected.shape.length !== actual.shape.length) return false;
  return expected.shape.every((d, i) => {
    const a = actual.shape[i]!;
    return d === VARIABLE_DIM || a === VARIABLE_DIM || d === a;
  });
}

export interface SignatureExpectation {
  /** The module file, named first in messages. */
  readonly file: string;
  readonly manifest: Manifest;
  /** Weights in argument_order; empty for a bundle without weights. */
  readonly weights: readonly SafetensorsEntry[];
  readonly weightsFile: string | null;
  /** The module's batch key; ANY_BATCH leaves the batch axis unconstrained. */
  readonly batchSize: number;
  readonly variant: InputShapeVariant | null;
}

interface Expected {
  readonly type: TensorType;
  readonly what: string;
}

export function checkMainSignature(sig: ProgramSignature, e: SignatureExpectation): void {
  const batch = e.batchSize === ANY_BATCH ? undefined : e.batchSize;
  const extents = e.variant?.extents;
  const at = batch === undefined ? 'any batch' : `batch ${batch}`;
  const variantNote = e.variant ? `, input_shapes[${e.variant.index}]` : '';
  const { manifest } = e;

  const params: Expected[] = [
    ...manifest.executableInputs.map((s, i) => ({
      type: { dtype: s.dtype, shape: s.wireShape(batch, extents) },
      what: `executable_inputs[${i}] "${s.name}" (shape "${s.letters}" at ${at}${variantNote})`,
    })),
    ...e.weights.map((w, i) => ({
      type: { dtype: w.dtype, shape: w.shape },
      what: `weight "${w.name}" (${e.weightsFile} __metadata__.argument_order[${i}])`,
    })),
  ];
  if (sig.parameters.length !== params.length) {
    const extra =
      sig.parameters.length === params.length + 1
        ? '; one extra leading argument (often tensor<2xui64>) usually means RNG or device state was captured at export'
        : '';
    throw bundleError(
      e.file,
      '@main',
      `takes ${sig.parameters.length} arguments but the bundle supplies ${params.length}: ` +
        `${manifest.executableInputs.length} executable_inputs + ${e.weights.length} weights in argument_order${extra}`,
    );
  }
  params.forEach((p, i) => {
    const actual = sig.parameters[i]!;
    if (!tensorTypeMatches(p.type, actual)) {
      throw bundleError(
        e.file,
        `@main argument ${i}`,
        `${p.what}: expected ${mlirTensorType(p.type)}, the module takes ${mlirTensorType(actual)}`,
      );
    }
  });

  const outputs = manifest.executableOutputs;
  if (sig.results.length !== outputs.length) {
    throw bundleError(
      e.file,
      '@main',
      `returns ${sig.results.length} results but ${manifest.file} executable_outputs lists ${outputs.length}`,
    );
  }
  outputs.forEach((s, i) => {
    const expected: TensorType = { dtype: s.dtype, shape: s.wireShape(batch, extents) };
    const actual = sig.results[i]!;
    if (!tensorTypeMatches(expected, actual)) {
      throw bundleError(
        e.file,
        `@main result ${i}`,
        `executable_outputs[${i}] "${s.name}" (shape "${s.letters}" at ${at}${variantNote}): ` +
          `expected ${mlirTensorType(expected)}, the module returns ${mlirTensorType(actual)}`,
      );
    }
  });
}
