import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { encodeSafetensors } from '@hloserve/engine/bundle/safetensors-writer';

/** A synthetic model repository: N small MLPs with distinct weights and a float64 reference. */
export interface CatalogModel {
  readonly name: string;
  readonly weightBytes: number;
  /** y = relu(x W1 + b1) W2 + b2 for one row, in float64. */
  reference(x: Float32Array): Float64Array;
}

export interface CatalogShape {
  readonly inputs: number;
  readonly hidden: number;
  readonly outputs: number;
  readonly batchSizes: readonly number[];
}

export const DEFAULT_SHAPE: CatalogShape = { inputs: 256, hidden: 512, outputs: 8, batchSizes: [1, 4, 8] };

function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return ((s >>> 0) / 4294967296) * 2 - 1;
  };
}

function mlir(b: number, s: CatalogShape): string {
  const { inputs: i, hidden: h, outputs: o } = s;
  return `module {
  func.func public @main(%x: tensor<${b}x${i}xf32>, %w1: tensor<${i}x${h}xf32>, %b1: tensor<${h}xf32>, %w2: tensor<${h}x${o}xf32>, %b2: tensor<${o}xf32>) -> tensor<${b}x${o}xf32> {
    %0 = stablehlo.dot_general %x, %w1, contracting_dims = [1] x [0] : (tensor<${b}x${i}xf32>, tensor<${i}x${h}xf32>) -> tensor<${b}x${h}xf32>
    %1 = stablehlo.broadcast_in_dim %b1, dims = [1] : (tensor<${h}xf32>) -> tensor<${b}x${h}xf32>
    %2 = stablehlo.add %0, %1 : tensor<${b}x${h}xf32>
    %z = stablehlo.constant dense<0.000000e+00> : tensor<${b}x${h}xf32>
    %3 = stablehlo.maximum %2, %z : tensor<${b}x${h}xf32>
    %4 = stablehlo.dot_general %3, %w2, contracting_dims = [1] x [0] : (tensor<${b}x${h}xf32>, tensor<${h}x${o}xf32>) -> tensor<${b}x${o}xf32>
    %5 = stablehlo.broadcast_in_dim %b2, dims = [1] : (tensor<${o}xf32>) -> tensor<${b}x${o}xf32>
    %6 = stablehlo.add %4, %5 : tensor<${b}x${o}xf32>
    return %6 : tensor<${b}x${o}xf32>
  }
}
`;
}

/** Writes `count` bundles named m00, m01, ... into `repo` and returns them in name order. */
export function writeCatalog(repo: string, count: number, shape: CatalogShape = DEFAULT_SHAPE): CatalogModel[] {
  const { inputs: i, hidden: h, outputs: o } = shape;
  const models: CatalogModel[] = [];
  for (let k = 0; k < count; k++) {
    const name = `m${String(k).padStart(2, '0')}`;
    const dir = join(repo, name);
    mkdirSync(dir, { recursive: true });
    const r = rng(1000 + k);
    const w1 = Float32Array.from({ length: i * h }, () => r() / Math.sqrt(i));
    const b1 = Float32Array.from({ length: h }, () => r() * 0.1);
    const w2 = Float32Array.from({ length: h * o }, () => r() / Math.sqrt(h));
    const b2 = Float32Array.from({ length: o }, () => r() * 0.1);
    const bytes = (a: Float32Array) => new Uint8Array(a.buffer);
    const tensors = [
      { name: 'w1', dtype: 'f32' as const, shape: [i, h], data: bytes(w1) },
      { name: 'b1', dtype: 'f32' as const, shape: [h], data: bytes(b1) },
      { name: 'w2', dtype: 'f32' as const, shape: [h, o], data: bytes(w2) },
      { name: 'b2', dtype: 'f32' as const, shape: [o], data: bytes(b2) },
    ];
    writeFileSync(
      join(dir, 'weights.safetensors'),
      encodeSafetensors(tensors, { argumentOrder: ['w1', 'b1', 'w2', 'b2'] }),
    );
    for (const b of shape.batchSizes) writeFileSync(join(dir, `model.b${b}.mlir`), mlir(b, shape));
    writeFileSync(
      join(dir, 'manifest.yaml'),
      [
        'format_version: "2.0"',
        `name: ${name}`,
        'executable_inputs:',
        `  - {name: x, dtype: f32, shape: fn, dims: {f: ${i}}}`,
        'executable_outputs:',
        `  - {name: y, dtype: f32, shape: kn, dims: {k: ${o}}}`,
        `batching: {compiled_batch_sizes: [${shape.batchSizes.join(', ')}]}`,
        '',
      ].join('\n'),
    );
    models.push({
      name,
      weightBytes: tensors.reduce((s, t) => s + t.data.byteLength, 0),
      reference(x: Float32Array): Float64Array {
        const hid = new Float64Array(h);
        for (let c = 0; c < h; c++) {
          let acc = b1[c]!;
          for (let p = 0; p < i; p++) acc += x[p]! * w1[p * h + c]!;
          hid[c] = Math.max(0, acc);
        }
        const y = new Float64Array(o);
        for (let c = 0; c < o; c++) {
          let acc = b2[c]!;
          for (let p = 0; p < h; p++) acc += hid[p]! * w2[p * o + c]!;
          y[c] = acc;
        }
        return y;
      },
    });
  }
  return models;
}

/** Loads and evictions per model that an LRU cache under `budget` bytes would make for `accesses`. */
export function simulateLru(
  sizes: ReadonlyMap<string, number>,
  budget: number,
  accesses: readonly string[],
): { loads: Map<string, number>; evictions: Map<string, number>; resident: string[] } {
  const lru: string[] = [];
  let used = 0;
  const loads = new Map<string, number>();
  const evictions = new Map<string, number>();
  for (const m of accesses) {
    const at = lru.indexOf(m);
    if (at >= 0) {
      lru.splice(at, 1);
      lru.push(m);
      continue;
    }
    const need = sizes.get(m)!;
    while (lru.length > 0 && used + need > budget) {
      const victim = lru.shift()!;
      used -= sizes.get(victim)!;
      evictions.set(victim, (evictions.get(victim) ?? 0) + 1);
    }
    lru.push(m);
    used += need;
    loads.set(m, (loads.get(m) ?? 0) + 1);
  }
  return { loads, evictions, resident: lru };
}

/** Sums the samples of one metric per `model` label (other labels, e.g. reason, are added up). */
export function metricByModel(text: string, name: string): Map<string, number> {
  const out = new Map<string, number>();
  const re = new RegExp(`^${name}\\{model="([^"]+)"[^}]*\\} ([0-9.e+-]+)$`, 'gm');
  for (const m of text.matchAll(re)) out.set(m[1]!, (out.get(m[1]!) ?? 0) + Number(m[2]));
  return out;
}
