/**
 * reference.safetensors: a known input of the executable and the output it must produce, used by
 * `hloserve check` and the tests. It describes the executable, not the hooks around it (a BYTES
 * client tensor has no safetensors form); a bundle with hooks keeps its client-level reference in
 * client-reference.json. Only the header is validated at load (names, dtypes, wire shapes against
 * the executable specs), so a stale reference file is caught when the bundle loads rather than
 * reported as a numerical failure later.
 */
import type { Manifest } from './manifest.js';
import { bundleError } from './bundle-error.js';
import type { SafetensorsHeader } from './safetensors.js';
import type { TensorSpec } from './tensor-spec.js';

export interface BundleReference {
  readonly path: string;
  /** `__metadata__.batch_size`: the batch the reference was computed at, when given. */
  readonly batchSize: number | null;
  /** Executable input names with an `input.<name>` tensor. */
  readonly inputs: readonly string[];
  /** Executable output names with an `output.<name>` tensor. */
  readonly outputs: readonly string[];
}

export function checkReferenceHeader(header: SafetensorsHeader, manifest: Manifest): BundleReference {
  const { file } = header;
  let batchSize: number | null = null;
  const rawBatch = header.metadata.batch_size;
  if (rawBatch !== undefined) {
    batchSize = Number(rawBatch);
    if (!/^[1-9]\d*$/.test(rawBatch)) {
      throw bundleError(
        file,
        '__metadata__.batch_size',
        `expected a positive integer, got ${JSON.stringify(rawBatch)}`,
      );
    }
  }
  const sides = {
    input: new Map<string, TensorSpec>(manifest.executableInputs.map((s) => [s.name, s])),
    output: new Map<string, TensorSpec>(manifest.executableOutputs.map((s) => [s.name, s])),
  };
  const found = { input: [] as string[], output: [] as string[] };
  for (const entry of header.entries) {
    const field = `tensors[${JSON.stringify(entry.name)}]`;
    const m = /^(input|output)\.(.+)$/.exec(entry.name);
    if (!m) throw bundleError(file, field, 'reference tensors are named input.<name> or output.<name>');
    const side = m[1] as 'input' | 'output';
    const spec = sides[side].get(m[2]!);
    if (!spec) {
      throw bundleError(
        file,
        field,
        `the manifest has no executable ${side} named "${m[2]}" (have: ${[...sides[side].keys()].join(', ')})`,
      );
    }
    checkAgainstSpec(spec, entry.dtype, entry.shape, batchSize, file, field);
    found[side].push(spec.name);
  }
  return { path: file, batchSize, inputs: found.input, outputs: found.output };
}

function checkAgainstSpec(
  spec: TensorSpec,
  dtype: string,
  shape: readonly number[],
  batchSize: number | null,
  file: string,
  field: string,
): void {
  // BYTES has no safetensors dtype; such a reference stores the encoded bytes, unchecked here.
  if (spec.dtype === 'BYTES') return;
  const expected = spec.wireShape(batchSize ?? undefined);
  const fits =
    spec.dtype === dtype && expected.length === shape.length && expected.every((d, i) => d === -1 || d === shape[i]);
  if (!fits) {
    throw bundleError(
      file,
      field,
      `${dtype} ${JSON.stringify(shape)} does not fit the manifest's ${spec.dtype} wire shape ${JSON.stringify(expected)} (-1 = any)`,
    );
  }
}
