// The model every server in bench/peers serves, read from its bundle's manifest (one owner: the
// manifest), as the peers and perf_analyzer need it: wire names, datatypes and row-major shapes
// with the batch axis as -1. The Python peers get it as JSON in HLOSERVE_PEER_MODEL (peer_model.py).
import { join } from 'node:path';
import { readManifest } from '../../engine/dist/src/bundle/manifest.js';
import { toTritonDataType, toWireDatatype } from '../../engine/dist/src/dtypes.js';

const tensor = (t) => ({
  name: t.name,
  datatype: toWireDatatype(t.dtype),
  // Triton's model_config.proto DataType, for the ModelConfig answer perf_analyzer reads.
  tritonType: toTritonDataType(t.dtype),
  shape: t.wireShape(),
});

/** The spec of examples/models/<model> under the checkout `root`. */
export async function modelSpec(root, model) {
  const bundle = join(root, 'examples', 'models', model);
  const m = await readManifest(join(bundle, 'manifest.yaml'));
  for (const t of [...m.executableInputs, ...m.executableOutputs])
    if (t.wireBatchAxis !== 0 || t.variableLetters.length > 0)
      throw new Error(`${model}: ${t.name} needs a leading batch axis and fixed extents for bench/peers`);
  return {
    name: model,
    bundle,
    inputs: m.executableInputs.map(tensor),
    outputs: m.executableOutputs.map(tensor),
  };
}

/** perf_analyzer's --shape value of an input: its non-batch extents. */
export const shapeFlag = (t) => `${t.name}:${t.shape.slice(1).join(',')}`;
