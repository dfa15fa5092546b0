import type { Bundle } from '../bundle/bundle.js';
import { clientInputSpecs, clientOutputSpecs } from '../bundle/manifest.js';
import type { TensorSpec } from '../bundle/tensor-spec.js';
import type { ModelIO } from '../codec/model-io.js';
import { toTritonDataTypeName, toWireDatatype } from '../dtypes.js';
import type { ModelConfigJson, ModelMetadata } from '../transports/service.js';

const io = (s: TensorSpec) => ({ name: s.name, dtype: s.dtype, dims: s.wireShape(), batchAxis: s.wireBatchAxis });

export function modelIO(bundle: Bundle, maxRows: number): ModelIO {
  return {
    name: bundle.name,
    inputs: clientInputSpecs(bundle.manifest).map(io),
    outputs: clientOutputSpecs(bundle.manifest).map(io),
    maxRows,
  };
}

export function modelMetadata(bundle: Bundle, platform: string): ModelMetadata {
  const t = (s: TensorSpec) => ({ name: s.name, datatype: toWireDatatype(s.dtype), shape: s.wireShape() });
  return {
    name: bundle.name,
    versions: ['1'],
    platform,
    inputs: clientInputSpecs(bundle.manifest).map(t),
    outputs: clientOutputSpecs(bundle.manifest).map(t),
  };
}

/**
 * Triton's model config. Triton's convention lists dims without the batch axis when
 * max_batch_size > 0, which can only describe a leading batch axis; models batched on another
 * axis report max_batch_size 0 and the full shape (perf_analyzer then sends the shape as is).
 */
export function modelConfig(
  bundle: Bundle,
  maxRows: number,
  sizes: readonly number[],
  maxQueueDelayUs: number,
  platform: string,
): ModelConfigJson {
  const specs = [...clientInputSpecs(bundle.manifest), ...clientOutputSpecs(bundle.manifest)];
  const leading = bundle.manifest.batched && specs.every((s) => s.wireBatchAxis === 0);
  const maxBatch = leading && Number.isFinite(maxRows) ? maxRows : 0;
  const t = (s: TensorSpec) => ({
    name: s.name,
    data_type: toTritonDataTypeName(s.dtype),
    dims: maxBatch > 0 ? s.wireShape().slice(1) : s.wireShape(),
  });
  return {
    name: bundle.name,
    platform: `hloserve_${platform}`,
    backend: 'hloserve',
    max_batch_size: maxBatch,
    input: clientInputSpecs(bundle.manifest).map(t),
    output: clientOutputSpecs(bundle.manifest).map(t),
    ...(maxBatch > 0
      ? {
          dynamic_batching: {
            preferred_batch_size: sizes.filter((b) => b > 0 && b <= maxBatch),
            max_queue_delay_microseconds: maxQueueDelayUs,
          },
        }
      : {}),
    parameters: { compiled_batch_sizes: { string_value: sizes.join(',') } },
  };
}
