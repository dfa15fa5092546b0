/**
 * Bundle fixtures written into os.tmpdir(): a tiny MLP (x[n,4] @ w[4,3] + b[3] -> y[n,3]) as
 * text StableHLO at batch sizes 1 and 4, its weights, and helpers to break one piece at a time.
 */
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DType } from '@hloserve/native/dtype';
import type { WireInferRequest } from '@hloserve/common/wire';
import { writeSafetensors, type SafetensorsInput } from '../../src/bundle/safetensors-writer.js';

export const MLP_MANIFEST = `format_version: "2.0"
name: mlp
description: two-layer test model
executable_inputs:
  - {name: x, dtype: f32, shape: fn, dims: {f: 4}}
executable_outputs:
  - {name: y, dtype: f32, shape: kn, dims: {k: 3}}
batching: {compiled_batch_sizes: [1, 4]}
provenance: {exporter: test}
`;

const MLIR_ELEMENT: Record<string, string> = {
  f32: 'f32',
  i32: 'i32',
  bool: 'i1',
  u8: 'ui8',
  f16: 'f16',
  bf16: 'bf16',
};

/** `tensor<4x3xf32>`; -1 prints as `?`. */
export function tensorType(shape: readonly number[], dtype = 'f32'): string {
  return `tensor<${[...shape.map((d) => (d < 0 ? '?' : String(d))), MLIR_ELEMENT[dtype] ?? dtype].join('x')}>`;
}

/** A text module whose main has these argument and result types (body: the MLP when it fits). */
export function textModule(args: readonly string[], results: readonly string[]): string {
  const params = args.map((t, i) => `%arg${i}: ${t}`).join(', ');
  const res = results.map((t) => `${t} {jax.result_info = ""}`).join(', ');
  return [
    'module @jit_mlp attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {',
    `  func.func public @main(${params}) -> (${res}) {`,
    `    %0 = stablehlo.constant dense<0.0> : ${results[0] ?? 'tensor<f32>'}`,
    `    return %0 : ${results[0] ?? 'tensor<f32>'}`,
    '  }',
    '}',
    '',
  ].join('\n');
}

/** The real MLP body, for the batch size given (used by the happy path). */
export function mlpModule(batch: number): string {
  const x = tensorType([batch, 4]);
  const y = tensorType([batch, 3]);
  return [
    'module @jit_mlp attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {',
    `  func.func public @main(%arg0: ${x} {mhlo.sharding = "{replicated}"}, %arg1: tensor<4x3xf32>, %arg2: tensor<3xf32>) -> (${y} {jax.result_info = "result"}) {`,
    `    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (${x}, tensor<4x3xf32>) -> ${y}`,
    `    %1 = stablehlo.broadcast_in_dim %arg2, dims = [1] : (tensor<3xf32>) -> ${y}`,
    `    %2 = stablehlo.add %0, %1 : ${y}`,
    `    return %2 : ${y}`,
    '  }',
    '}',
    '',
  ].join('\n');
}

export function f32(shape: readonly number[], start = 0): Float32Array {
  const n = shape.reduce((a, b) => a * b, 1);
  return Float32Array.from({ length: n }, (_, i) => start + i * 0.5);
}

export function tensor(name: string, dtype: DType, shape: readonly number[], data?: ArrayBufferView): SafetensorsInput {
  const n = shape.reduce((a, b) => a * b, 1);
  const bytes = {
    f32: 4,
    f64: 8,
    i32: 4,
    i64: 8,
    f16: 2,
    bf16: 2,
    i16: 2,
    u16: 2,
    u32: 4,
    u64: 8,
    i8: 1,
    u8: 1,
    bool: 1,
  }[dtype];
  return { name, dtype, shape, data: data ?? new Uint8Array(n * bytes) };
}

export const MLP_WEIGHTS: readonly SafetensorsInput[] = [
  tensor('w', 'f32', [4, 3], f32([4, 3])),
  tensor('b', 'f32', [3], f32([3], 10)),
];

export async function tempDir(prefix = 'hloserve-bundle-'): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}

export async function removeDir(dir: string): Promise<void> {
  // A stopped worker may still be finishing a compile-cache write in the directory: retry ENOTEMPTY.
  await rm(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
}

/** Files by name: strings are written as UTF-8, byte arrays as is, null skips the file. */
export type BundleFiles = Record<string, string | Uint8Array | null>;

export async function writeFiles(dir: string, files: BundleFiles): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (const [name, content] of Object.entries(files)) {
    if (content !== null) await writeFile(join(dir, name), content);
  }
}

/**
 * Writes the MLP bundle into `<root>/<name>`; `overrides` replaces or removes (null) files, and
 * `weights` replaces the weights file (null: no weights file).
 */
export async function writeMlpBundle(
  root: string,
  name = 'mlp',
  overrides: BundleFiles = {},
  weights: { tensors: readonly SafetensorsInput[]; argumentOrder?: readonly string[] } | null = {
    tensors: MLP_WEIGHTS,
    argumentOrder: ['w', 'b'],
  },
): Promise<string> {
  const dir = join(root, name);
  await writeFiles(dir, {
    'manifest.yaml': MLP_MANIFEST,
    'model.b1.mlir': mlpModule(1),
    'model.b4.mlir': mlpModule(4),
    ...overrides,
  });
  if (weights) {
    await writeSafetensors(
      join(dir, 'weights.safetensors'),
      weights.tensors,
      weights.argumentOrder ? { argumentOrder: weights.argumentOrder } : {},
    );
  }
  return dir;
}

/** A request of `rows` rows to a model with the fixture MLP's input (x f32 [n,4], x[i] = i / 10). */
export function mlpRequest(
  model: string,
  rows: number,
  parameters: Record<string, string | number> = {},
): WireInferRequest {
  const x = new Float32Array(rows * 4).map((_, i) => i / 10);
  return {
    modelName: model,
    modelVersion: '',
    id: `${model}-${JSON.stringify(parameters)}`,
    parameters,
    inputs: [
      {
        name: 'x',
        datatype: 'FP32',
        shape: [rows, 4],
        parameters: {},
        data: { kind: 'raw', bytes: new Uint8Array(x.buffer) },
      },
    ],
    outputs: [],
  };
}
