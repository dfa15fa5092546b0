import type { TensorDType } from '../tensor.js';

/** A client-facing tensor as the codec checks it: wire (row-major) shape, -1 where any extent goes. */
export interface IoTensorSpec {
  readonly name: string;
  readonly dtype: TensorDType;
  /** Wire shape; -1 for variable extents and for the batch axis. */
  readonly dims: readonly number[];
  /** Index of the batch axis in wire order, or null for an unbatched tensor. */
  readonly batchAxis: number | null;
}

export interface ModelIO {
  readonly name: string;
  readonly inputs: readonly IoTensorSpec[];
  readonly outputs: readonly IoTensorSpec[];
  /** The most rows one request may carry (the largest compiled batch size, capped by max_batch_size). */
  readonly maxRows: number;
}
