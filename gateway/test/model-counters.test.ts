import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { ModelStatistics } from '@hloserve/proto';
import { modelCounters } from '../src/placement/model-counters.js';

const d = (count: number, ns: number) => ({ count, ns });

suite('model counters from Triton statistics', () => {
  test("device time is the executions' sum, a batch counted once however many requests it served", () => {
    // 6 requests: 2 alone (1 ms each) and 4 in two batches of two (1.5 ms each). compute_infer
    // per request is 2 + 4 x 1.5 = 8 ms; the device was busy 2 + 2 x 1.5 = 5 ms.
    const s = ModelStatistics.fromPartial({
      name: 'fno',
      inferenceStats: { success: d(6, 9e6), computeInfer: d(6, 8e6) },
      batchStats: [
        { batchSize: 1, computeInfer: d(2, 2e6) },
        { batchSize: 2, computeInfer: d(2, 3e6) },
      ],
      memoryUsage: [{ type: 'CPU', id: 0, byteSize: 1000 }],
    });
    assert.deepEqual(modelCounters(s), { requests: 6, computeSeconds: 0.005, weightBytes: 1000 });
  });

  test('a model that has not run: zero device time', () => {
    assert.deepEqual(modelCounters(ModelStatistics.fromPartial({ name: 'idle' })), {
      requests: 0,
      computeSeconds: 0,
      weightBytes: 0,
    });
  });
});
