/**
 * Choosing the compiled batch size for the next dispatch of one model, and how many requests
 * from the front of its queue it takes (reference §2.5, same rules and test vectors). Requests
 * are never split and never reordered: the plan always takes a FIFO prefix, at least the front.
 */

export interface BatchPlan {
  /** Compiled batch size to execute; 0 = the model's single module that accepts any batch. */
  readonly batchSize: number;
  /** Requests taken from the front of the queue (a prefix, always >= 1). */
  readonly count: number;
  /** Rows those requests carry; batchSize - rows is padding (when batchSize > 0). */
  readonly rows: number;
}

export interface PlanOptions {
  /** Several requests may share one execution (every input and output has a batch axis). */
  readonly coalescable?: boolean;
  /**
   * Measured seconds per execution at a compiled size, undefined when never measured. When given,
   * a larger size that serves more of the queue at a lower cost per row replaces the greedy
   * choice (reference weakness 8); unmeasured sizes are never chosen on a guess.
   */
  readonly measuredCost?: (batchSize: number) => number | undefined;
}

/** Sorted distinct sizes; [] and any list holding 0 mean "one module for any batch". */
export function normalizeBatchSizes(sizes: readonly number[]): number[] {
  return [...new Set(sizes)].sort((a, b) => a - b);
}

export function acceptsAnyBatch(sortedSizes: readonly number[]): boolean {
  return sortedSizes.length === 0 || sortedSizes[0] === 0;
}

/**
 * How far the caller must scan its queue: planBatch's result depends only on the prefix up to
 * and including the request whose rows bring the running sum to this many rows.
 */
export function planScanRows(sortedSizes: readonly number[], cap: number | null): number {
  if (acceptsAnyBatch(sortedSizes)) return 1;
  return Math.min(sortedSizes[sortedSizes.length - 1]!, cap ?? Infinity);
}

/** Requests taken greedily from the front while their rows fit in `limit`; stops at the first misfit. */
function greedyPrefix(prefixRows: readonly number[], limit: number): { count: number; rows: number } {
  let count = 0;
  let rows = 0;
  for (const r of prefixRows) {
    if (rows + r > limit) break;
    rows += r;
    count++;
  }
  return { count, rows };
}

/**
 * `prefixRows`: rows of the queued requests that may share a dispatch with the front one (same
 * input shapes), front first; it may be cut after planScanRows rows. `cap`: max_batch_size
 * (rows per dispatch), null for none. `sortedSizes`: from normalizeBatchSizes.
 */
export function planBatch(
  prefixRows: readonly number[],
  sortedSizes: readonly number[],
  cap: number | null,
  options: PlanOptions = {},
): BatchPlan {
  const front = prefixRows[0];
  if (front === undefined) throw new Error('planBatch: empty queue');
  if (acceptsAnyBatch(sortedSizes)) return { batchSize: 0, count: 1, rows: front };
  const minB = sortedSizes[0]!;
  const maxB = sortedSizes[sortedSizes.length - 1]!;
  const smallestHolding = (rows: number): number => sortedSizes.find((s) => s >= rows) ?? maxB;
  if (options.coalescable === false) return { batchSize: smallestHolding(front), count: 1, rows: front };

  const capRows = cap ?? Infinity;
  let queued = 0;
  for (const r of prefixRows) queued += r;
  const R = Math.min(queued, capRows);
  let B = minB;
  if (R >= minB) {
    const bound = Math.min(R, maxB);
    for (const s of sortedSizes) if (s <= bound) B = s;
  }
  if (B < front) B = smallestHolding(front);
  let taken = greedyPrefix(prefixRows, Math.min(B, capRows));
  // Forward progress: a front request larger than the cap still runs, alone.
  if (taken.count === 0) taken = { count: 1, rows: front };
  let plan: BatchPlan = { batchSize: B, count: taken.count, rows: taken.rows };

  const cost = options.measuredCost;
  const baseCost = cost?.(B);
  if (cost === undefined || baseCost === undefined) return plan;
  let bestPerRow = baseCost / plan.rows;
  for (const s of sortedSizes) {
    if (s <= B) continue;
    const t = greedyPrefix(prefixRows, Math.min(s, capRows));
    if (t.rows <= plan.rows) continue;
    const c = cost(s);
    if (c === undefined) continue;
    if (c / t.rows < bestPerRow) {
      bestPerRow = c / t.rows;
      plan = { batchSize: s, count: t.count, rows: t.rows };
    }
  }
  return plan;
}
