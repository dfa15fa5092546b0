/** Small StableHLO programs and float64 references shared by the native tests and bench/. */

export const ADD = (n: number, t = 'f32') => `module {
  func.func public @main(%a: tensor<${n}x${t}>, %b: tensor<${n}x${t}>) -> tensor<${n}x${t}> {
    %0 = stablehlo.add %a, %b : tensor<${n}x${t}>
    return %0 : tensor<${n}x${t}>
  }
}`;

export const IDENTITY = (shape: string, t: string) => `module {
  func.func public @main(%a: tensor<${shape}x${t}>) -> tensor<${shape}x${t}> {
    return %a : tensor<${shape}x${t}>
  }
}`;

export const DOT = (m: number, k: number, n: number) => `module {
  func.func public @main(%a: tensor<${m}x${k}xf32>, %b: tensor<${k}x${n}xf32>) -> tensor<${m}x${n}xf32> {
    %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<${m}x${k}xf32>, tensor<${k}x${n}xf32>) -> tensor<${m}x${n}xf32>
    return %0 : tensor<${m}x${n}xf32>
  }
}`;

// NHWC input, HWIO kernel, SAME padding for a 3x3 window.
export const CONV = (n: number, h: number, w: number, ci: number, co: number) => `module {
  func.func public @main(%x: tensor<${n}x${h}x${w}x${ci}xf32>, %k: tensor<3x3x${ci}x${co}xf32>) -> tensor<${n}x${h}x${w}x${co}xf32> {
    %0 = stablehlo.convolution(%x, %k) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<${n}x${h}x${w}x${ci}xf32>, tensor<3x3x${ci}x${co}xf32>) -> tensor<${n}x${h}x${w}x${co}xf32>
    return %0 : tensor<${n}x${h}x${w}x${co}xf32>
  }
}`;

export const MLP = (b: number, i: number, h: number, o: number) => `module {
  func.func public @main(%x: tensor<${b}x${i}xf32>, %w1: tensor<${i}x${h}xf32>, %b1: tensor<${h}xf32>, %w2: tensor<${h}x${o}xf32>, %b2: tensor<${o}xf32>) -> tensor<${b}x${o}xf32> {
    %0 = stablehlo.dot_general %x, %w1, contracting_dims = [1] x [0] : (tensor<${b}x${i}xf32>, tensor<${i}x${h}xf32>) -> tensor<${b}x${h}xf32>
    %1 = stablehlo.broadcast_in_dim %b1, dims = [1] : (tensor<${h}xf32>) -> tensor<${b}x${h}xf32>
    %2 = stablehlo.add %0, %1 : tensor<${b}x${h}xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<${b}x${h}xf32>
    %3 = stablehlo.maximum %2, %cst : tensor<${b}x${h}xf32>
    %4 = stablehlo.dot_general %3, %w2, contracting_dims = [1] x [0] : (tensor<${b}x${h}xf32>, tensor<${h}x${o}xf32>) -> tensor<${b}x${o}xf32>
    %5 = stablehlo.broadcast_in_dim %b2, dims = [1] : (tensor<${o}xf32>) -> tensor<${b}x${o}xf32>
    %6 = stablehlo.add %4, %5 : tensor<${b}x${o}xf32>
    return %6 : tensor<${b}x${o}xf32>
  }
}`;

/**
 * A Fourier-layer stack in the shape of examples/models/fno: per layer a 2-D real FFT and its
 * inverse beside a pointwise channel mix, added and squashed. The two branches are independent,
 * so the plugin runs one on an Eigen thread, and its FFT (ducc) waits there for pieces of work it
 * hands to the same pool. Inputs: x (1 x c x n x n), w (c x c).
 */
export const SPECTRAL = (layers: number, c = 16, n = 64) => {
  const h = n / 2 + 1;
  const t = `tensor<1x${c}x${n}x${n}xf32>`;
  const f = `tensor<1x${c}x${n}x${h}xcomplex<f32>>`;
  const mixed = `tensor<${c}x1x${n}x${n}xf32>`;
  let body = '';
  let prev = '%x';
  for (let i = 0; i < layers; i++) {
    body += `    %f${i} = stablehlo.fft ${prev}, type = RFFT, length = [${n}, ${n}] : (${t}) -> ${f}
    %g${i} = stablehlo.fft %f${i}, type = IRFFT, length = [${n}, ${n}] : (${f}) -> ${t}
    %d${i} = stablehlo.dot_general %w, ${prev}, contracting_dims = [1] x [1] : (tensor<${c}x${c}xf32>, ${t}) -> ${mixed}
    %m${i} = stablehlo.transpose %d${i}, dims = [1, 0, 2, 3] : (${mixed}) -> ${t}
    %s${i} = stablehlo.add %g${i}, %m${i} : ${t}
    %y${i} = stablehlo.tanh %s${i} : ${t}
`;
    prev = `%y${i}`;
  }
  return `module {
  func.func public @main(%x: ${t}, %w: tensor<${c}x${c}xf32>) -> ${t} {
${body}    return ${prev} : ${t}
  }
}`;
};

/** Deterministic pseudo-random floats in [-1, 1) (xorshift), so failures reproduce. */
/**
 * A program whose compile takes a few hundred ms of CPU: `n` convolutions with distinct kernels
 * (`scale` varies the constants, `op` the elementwise step, so two tests' programs differ).
 */
export function heavyProgram(n: number, scale = 7, op: 'sine' | 'cosine' = 'sine'): string {
  const t = 'tensor<1x16x16x8xf32>';
  const k = 'tensor<3x3x8x8xf32>';
  let body = '';
  let prev = '%x';
  for (let i = 0; i < n; i++) {
    body += `    %s${i} = stablehlo.constant dense<${((i + 1) / scale).toFixed(4)}> : ${k}\n`;
    body += `    %q${i} = stablehlo.multiply %k, %s${i} : ${k}\n`;
    body += `    %c${i} = stablehlo.convolution(${prev}, %q${i}) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (${t}, ${k}) -> ${t}\n`;
    body += `    %t${i} = stablehlo.${op} %c${i} : ${t}\n`;
    prev = `%t${i}`;
  }
  return `module {\n  func.func public @main(%x: ${t}, %k: ${k}) -> ${t} {\n${body}    return ${prev} : ${t}\n  }\n}`;
}

export function randomF32(n: number, seed = 1): Float32Array {
  let s = seed >>> 0 || 1;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    out[i] = ((s >>> 0) / 4294967296) * 2 - 1;
  }
  return out;
}

export function matmul64(a: ArrayLike<number>, b: ArrayLike<number>, m: number, k: number, n: number): Float64Array {
  const c = new Float64Array(m * n);
  for (let i = 0; i < m; i++)
    for (let p = 0; p < k; p++) {
      const x = a[i * k + p]!;
      for (let j = 0; j < n; j++) c[i * n + j]! += x * b[p * n + j]!;
    }
  return c;
}

export function conv64(
  x: ArrayLike<number>,
  k: ArrayLike<number>,
  n: number,
  h: number,
  w: number,
  ci: number,
  co: number,
): Float64Array {
  const out = new Float64Array(n * h * w * co);
  for (let b = 0; b < n; b++)
    for (let y = 0; y < h; y++)
      for (let xx = 0; xx < w; xx++)
        for (let o = 0; o < co; o++) {
          let acc = 0;
          for (let dy = 0; dy < 3; dy++)
            for (let dx = 0; dx < 3; dx++) {
              const iy = y + dy - 1;
              const ix = xx + dx - 1;
              if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
              for (let c = 0; c < ci; c++) {
                acc += x[((b * h + iy) * w + ix) * ci + c]! * k[((dy * 3 + dx) * ci + c) * co + o]!;
              }
            }
          out[((b * h + y) * w + xx) * co + o] = acc;
        }
  return out;
}

/** max |got - want| / max(|want|, 1e-6) over all elements. */
export function maxRelError(got: ArrayLike<number>, want: ArrayLike<number>): number {
  let worst = 0;
  let scale = 0;
  for (let i = 0; i < want.length; i++) scale = Math.max(scale, Math.abs(want[i]!));
  for (let i = 0; i < want.length; i++) {
    worst = Math.max(worst, Math.abs(got[i]! - want[i]!) / Math.max(scale, 1e-6));
  }
  return worst;
}

export const f32 = (a: Float32Array) => ({ dtype: 'f32' as const, shape: [a.length], data: new Uint8Array(a.buffer) });
