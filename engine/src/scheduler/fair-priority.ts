/**
 * The fair discipline's score (reference §2.3): how far a model is below its weighted share of
 * recent device time, capped so one long-idle model cannot monopolise the device, and divided by
 * what its next dispatch is expected to cost so that cheap work gets through quickly.
 *
 * `share` = weight / total weight, `normalizedEma` = the model's recent compute / total recent
 * compute, `cap` = recency_penalty_cap, `effectiveCost` = expected cost of the planned dispatch
 * (any unit, as long as all candidates use the same one). Higher is better.
 */
export function fairPriority(share: number, normalizedEma: number, cap: number, effectiveCost: number): number {
  const deficit = Math.min(cap, Math.max(-cap, share - normalizedEma));
  return deficit / effectiveCost;
}

/**
 * The cost fed to fairPriority. The reference multiplied every candidate by (1 - discount), which
 * never changes the winner; here the discount applies only when the planned dispatch serves more
 * than one request, so it favours work that amortises a device call over several callers.
 */
export function effectiveCost(costEstimate: number, requestsTaken: number, coalescingDiscount: number): number {
  return requestsTaken > 1 ? costEstimate * (1 - coalescingDiscount) : costEstimate;
}
