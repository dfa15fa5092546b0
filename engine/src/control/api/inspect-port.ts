/**
 * What the console's model detail and queues screens read beyond ModelPort: the manifest's
 * tensors, latency and batch-size histograms, the scheduler's queues, the versions kept in the
 * repository (and rollback to one), and a "try it" inference of the bundle's reference input.
 * worker-inspect-port.ts implements it over the Worker; the routes are in inspect-routes.ts.
 */
import type {
  BundleVersionView,
  ModelHistogramsView,
  ModelIoView,
  QueuesView,
  TryResult,
} from '@hloserve/common/control-api';

// The shapes are the API's (common/src/control-api.ts, shared with the console).
export type {
  BundleVersionView,
  HistogramView,
  ModelHistogramsView,
  ModelIoView,
  QueueModelView,
  QueuesView,
  ReferenceSource,
  TensorView,
  TryResult,
  TryTensor,
} from '@hloserve/common/control-api';

export interface InspectPort {
  io(name: string): Promise<ModelIoView>;
  histograms(name: string): ModelHistogramsView;
  queues(): QueuesView;
  versions(name: string): Promise<BundleVersionView[]>;
  /** Puts a kept version back in place of the current one (which is kept in turn), then loads it. */
  rollback(name: string, id: string, signal?: AbortSignal): Promise<BundleVersionView[]>;
  /** Runs the bundle's reference input (or a generated one) through the engine's infer path. */
  tryInfer(name: string, signal?: AbortSignal): Promise<TryResult>;
}
