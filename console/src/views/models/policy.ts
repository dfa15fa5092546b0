import type { ModelPolicyView } from '../../api/types.js';

export type PolicyErrors = Partial<Record<keyof ModelPolicyView, string>>;

/** The bounds the engine's schema checks (PATCH /models/:name/policy), said before a round trip. */
export function validatePolicy(p: ModelPolicyView): PolicyErrors {
  const e: PolicyErrors = {};
  if (!Number.isFinite(p.weight) || p.weight <= 0 || p.weight > 1e6) e.weight = 'a number above 0, at most 1,000,000';
  if (p.maxBatchSize !== null && (!Number.isInteger(p.maxBatchSize) || p.maxBatchSize < 1))
    e.maxBatchSize = 'empty or a whole number of at least 1';
  if (
    p.maxQueueDelayUs !== null &&
    (!Number.isInteger(p.maxQueueDelayUs) || p.maxQueueDelayUs < 0 || p.maxQueueDelayUs > 60_000_000)
  )
    e.maxQueueDelayUs = 'empty or whole microseconds, at most 60 s';
  return e;
}

export interface PolicyChange {
  readonly key: keyof ModelPolicyView;
  readonly before: unknown;
  readonly after: unknown;
}

export function diffPolicy(before: ModelPolicyView, after: ModelPolicyView): PolicyChange[] {
  return (Object.keys(after) as (keyof ModelPolicyView)[])
    .filter((k) => before[k] !== after[k])
    .map((k) => ({ key: k, before: before[k], after: after[k] }));
}

/** Only the fields that change go in the PATCH, so the audit record says exactly what changed. */
export function policyPatch(changes: readonly PolicyChange[]): Partial<ModelPolicyView> {
  return Object.fromEntries(changes.map((c) => [c.key, c.after])) as Partial<ModelPolicyView>;
}
