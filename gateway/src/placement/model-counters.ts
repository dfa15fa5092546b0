/**
 * A worker's Triton model statistics as the placement reads them. Device time is the sum of the
 * model's executions (`batch_stats`), each counted once: Triton's `inference_stats.compute_infer`
 * adds a batch's execution time once per request in it, so a worker that batches a model's
 * requests together would look busier the more it batched (session 14 saw fno measure 3.1 s
 * on the worker whose two callers met in batches of two, against 0.85 s beside it at the same
 * weight).
 */
import type { ModelStatistics } from '@hloserve/proto';
import type { ModelCounters } from './load-estimator.js';

export function modelCounters(s: ModelStatistics): ModelCounters {
  return {
    requests: s.inferenceStats?.success?.count ?? 0,
    computeSeconds: s.batchStats.reduce((a, b) => a + (b.computeInfer?.ns ?? 0), 0) / 1e9,
    weightBytes: s.memoryUsage.reduce((a, m) => a + m.byteSize, 0),
  };
}
