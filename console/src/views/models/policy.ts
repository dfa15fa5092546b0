import type { Policy } from '../../api/types.js';

export type PolicyErrors = Partial<Record<keyof Policy, string>>;

/** The same bounds the engine checks; the console says so before a round trip. */
export function validatePolicy(p: Policy): PolicyErrors {
  const e: PolicyErrors = {};
  if (!Number.isFinite(p.weight) || p.weight <= 0) e.weight = 'a positive number';
  if (!Number.isInteger(p.priority)) e.priority = 'a whole number';
  if (!Number.isInteger(p.maxQueue) || p.maxQueue < 1) e.maxQueue = 'a whole number of at least 1';
  if (p.ttlSeconds !== null && (!Number.isFinite(p.ttlSeconds) || p.ttlSeconds <= 0))
    e.ttlSeconds = 'empty or a positive number';
  return e;
}

export interface PolicyChange {
  readonly key: keyof Policy;
  readonly before: unknown;
  readonly after: unknown;
}

export function diffPolicy(before: Policy, after: Policy): PolicyChange[] {
  return (Object.keys(after) as (keyof Policy)[])
    .filter((k) => before[k] !== after[k])
    .map((k) => ({ key: k, before: before[k], after: after[k] }));
}
