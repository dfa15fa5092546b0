/**
 * Per-model running totals the scheduler keeps for metrics, the control API's ModelStatus and the
 * console. Monotone counters only grow; gauges (depth, in flight) are read live.
 */
import type { DropReason } from './events.js';

export class ModelCounters {
  requestsServed = 0;
  rowsServed = 0;
  paddedRows = 0;
  dispatchCount = 0;
  /** Executions per compiled batch size. */
  readonly batchSizeHistogram = new Map<number, number>();
  queueWaitSecondsTotal = 0;
  /** Requests that reached the device (the denominator of the queue-wait average). */
  queueWaitCount = 0;
  computeSecondsTotal = 0;
  /** Dispatches whose weight acquire or execution failed. */
  failedDispatches = 0;
  dispatchTimeouts = 0;
  readonly dropped: Record<DropReason, number> = {
    invalid: 0,
    'queue-full': 0,
    expired: 0,
    shed: 0,
    cancelled: 0,
    shutdown: 0,
    unloaded: 0,
    failed: 0,
    timeout: 0,
  };

  recordDispatch(batchSize: number): void {
    this.dispatchCount++;
    this.batchSizeHistogram.set(batchSize, (this.batchSizeHistogram.get(batchSize) ?? 0) + 1);
  }
}

export interface ModelSchedulingStats {
  readonly model: string;
  readonly weight: number;
  readonly queueDepth: number;
  readonly queuedRows: number;
  /** How long the front of the queue has waited (scheduler clock ms); 0 when the queue is empty. */
  readonly oldestWaitMs: number;
  /** Requests taken by executions that have not settled. */
  readonly inflightRequests: number;
  readonly requestsServed: number;
  readonly rowsServed: number;
  readonly paddedRows: number;
  readonly dispatchCount: number;
  readonly batchSizeHistogram: Readonly<Record<number, number>>;
  readonly queueWaitSecondsTotal: number;
  readonly queueWaitCount: number;
  readonly computeSecondsTotal: number;
  readonly failedDispatches: number;
  readonly dispatchTimeouts: number;
  readonly dropped: Readonly<Record<DropReason, number>>;
  /** Learned seconds per execution, by compiled batch size. */
  readonly costEstimates: Readonly<Record<number, number>>;
  /** Decayed recent compute seconds (the fair discipline's memory). */
  readonly recentComputeSeconds: number;
  /** Largest rows one request may carry (Infinity for an any-batch module). */
  readonly maxRows: number;
}
