/**
 * How firmly a model's weights are held (its floor; the cache may hold more, never less):
 * - unpinned: nothing is kept; a cold start re-reads the bundle's weights file, then uploads.
 * - system: a host-memory copy is kept, so a cold start is one host-to-device copy. The default.
 * - device: uploaded once and never evicted; outside the cache's byte budget.
 */
export type Residency = 'unpinned' | 'system' | 'device';

export const RESIDENCIES: readonly Residency[] = ['unpinned', 'system', 'device'];

export function isResidency(x: unknown): x is Residency {
  return typeof x === 'string' && (RESIDENCIES as readonly string[]).includes(x);
}
