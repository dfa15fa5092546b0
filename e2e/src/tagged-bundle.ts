import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { encodeSafetensors } from '@hloserve/engine/bundle/safetensors-writer';

/** Width of a tagged model's input and output rows. */
export const TAG_WIDTH = 4;
export const TAG_BATCH_SIZES = [1, 4] as const;

function module(b: number, tag: number): string {
  const t = `tensor<${b}x${TAG_WIDTH}xf32>`;
  // The comment makes every version's module bytes differ, as a re-export would.
  return `// version ${tag}
module {
  func.func public @main(%x: ${t}, %tag: tensor<${TAG_WIDTH}xf32>) -> ${t} {
    %0 = stablehlo.broadcast_in_dim %tag, dims = [1] : (tensor<${TAG_WIDTH}xf32>) -> ${t}
    %1 = stablehlo.add %x, %0 : ${t}
    return %1 : ${t}
  }
}
`;
}

/**
 * Writes (or overwrites in place) a bundle whose output is its input plus `tag` in every element:
 * a zero input answers the tag, so every response names the version that computed it. `broken`
 * writes modules that do not compile.
 */
export function writeTaggedBundle(repo: string, name: string, tag: number, broken = false): void {
  const dir = join(repo, name);
  mkdirSync(dir, { recursive: true });
  const data = new Uint8Array(new Float32Array(TAG_WIDTH).fill(tag).buffer);
  writeFileSync(
    join(dir, 'weights.safetensors'),
    encodeSafetensors([{ name: 'tag', dtype: 'f32', shape: [TAG_WIDTH], data }], { argumentOrder: ['tag'] }),
  );
  for (const b of TAG_BATCH_SIZES)
    writeFileSync(join(dir, `model.b${b}.mlir`), broken ? `this is not stablehlo (version ${tag})\n` : module(b, tag));
  writeFileSync(
    join(dir, 'manifest.yaml'),
    [
      'format_version: "2.0"',
      `name: ${name}`,
      'executable_inputs:',
      `  - {name: x, dtype: f32, shape: fn, dims: {f: ${TAG_WIDTH}}}`,
      'executable_outputs:',
      `  - {name: y, dtype: f32, shape: kn, dims: {k: ${TAG_WIDTH}}}`,
      `batching: {compiled_batch_sizes: [${TAG_BATCH_SIZES.join(', ')}]}`,
      '',
    ].join('\n'),
  );
}
