/**
 * Pure functions that fold a stream delta into what the cache holds for a topic. The cache is the
 * one store: the REST answer and the stream snapshot land in the same key, deltas update it.
 */
import type { AppendDelta, ListDelta, MetricsTick } from './types.js';

export interface Named {
  readonly name: string;
}

export interface ListChange<T> {
  readonly next: readonly T[];
  /** Names added or removed: their detail queries are stale (a structural change). */
  readonly structural: readonly string[];
}

/** Upserts by name (keeping the list's order, new names at the end) and removes names. */
export function applyListDelta<T extends Named>(prev: readonly T[] | undefined, delta: ListDelta<T>): ListChange<T> {
  const list = prev ?? [];
  const removed = new Set(delta.remove ?? []);
  const updates = new Map<string, T>();
  for (const item of delta.upsert ?? []) updates.set(item.name, item);
  const structural: string[] = [];
  const next: T[] = [];
  const seen = new Set<string>();
  for (const item of list) {
    if (removed.has(item.name)) {
      structural.push(item.name);
      continue;
    }
    seen.add(item.name);
    next.push(updates.get(item.name) ?? item);
  }
  for (const [name, item] of updates) {
    if (seen.has(name) || removed.has(name)) continue;
    structural.push(name);
    next.push(item);
  }
  return { next, structural };
}

/** Newest first, capped: the Activity screen holds a bounded window of the audit and event logs. */
export function applyAppendDelta<T extends { readonly id: string }>(
  prev: readonly T[] | undefined,
  delta: AppendDelta<T>,
  cap = 1000,
): readonly T[] {
  const list = prev ?? [];
  const known = new Set(list.map((e) => e.id));
  const fresh = delta.append.filter((e) => !known.has(e.id)).reverse();
  if (fresh.length === 0) return list;
  return [...fresh, ...list].slice(0, cap);
}

/** A ring of metric ticks, oldest first, at most `cap` points (five minutes at 1 Hz by default). */
export function applyTick(
  prev: readonly MetricsTick[] | undefined,
  tick: MetricsTick,
  cap = 300,
): readonly MetricsTick[] {
  const list = prev ?? [];
  const last = list[list.length - 1];
  if (last && tick.timeMs <= last.timeMs) return list; // replay of a tick already held
  const next = list.length >= cap ? list.slice(list.length - cap + 1) : list.slice();
  next.push(tick);
  return next;
}
