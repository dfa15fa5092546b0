/**
 * Device-time share against weight over time, from successive GET /queues answers: between two
 * answers each model's share is its increase in device seconds over every model's increase. The
 * engine's own share (contendedShare) counts only time used while others waited, which is what
 * the fair discipline balances; this one is what the device actually spent, so the two differ
 * when a model runs alone.
 */
import type { QueuesView } from '../../api/types.js';

export interface SharePoint {
  /** Epoch ms of the later answer. */
  readonly at: number;
  /** Per model: part of the device time used in the interval (absent: none was used at all). */
  readonly device: Readonly<Record<string, number>>;
  /** Per model: weight over the sum of weights. */
  readonly weight: Readonly<Record<string, number>>;
  /** Device seconds used in the interval, all models together. */
  readonly busySeconds: number;
}

export interface ShareHistory {
  readonly last: QueuesView | null;
  readonly points: readonly SharePoint[];
}

export const emptyShareHistory: ShareHistory = { last: null, points: [] };

/** Adds one answer; at most `cap` points are kept (150 at 2 s: five minutes). */
export function foldQueueSample(prev: ShareHistory | undefined, q: QueuesView, cap = 150): ShareHistory {
  const h = prev ?? emptyShareHistory;
  const last = h.last;
  if (last !== null && q.at <= last.at) return h; // the same answer again, or out of order
  const weight = Object.fromEntries(q.models.map((m) => [m.name, m.weightShare]));
  if (last === null) return { last: q, points: h.points };
  const before = new Map(last.models.map((m) => [m.name, m.computeSecondsTotal]));
  const used = new Map<string, number>();
  let busy = 0;
  for (const m of q.models) {
    const b = before.get(m.name);
    // A model new since the last answer, or whose counters restarted (a reload), has no interval.
    const d = b === undefined ? 0 : Math.max(0, m.computeSecondsTotal - b);
    used.set(m.name, d);
    busy += d;
  }
  const device: Record<string, number> = {};
  if (busy > 0) for (const [name, d] of used) device[name] = d / busy;
  const point: SharePoint = { at: q.at, device, weight, busySeconds: busy };
  const points = h.points.length >= cap ? h.points.slice(h.points.length - cap + 1) : h.points;
  return { last: q, points: [...points, point] };
}

/** The `n` models with the most device time over the history (ties by name), for the chart. */
export function busiestModels(h: ShareHistory, n: number): string[] {
  const total = new Map<string, number>();
  for (const p of h.points)
    for (const [name, share] of Object.entries(p.device))
      total.set(name, (total.get(name) ?? 0) + share * p.busySeconds);
  return [...total]
    .filter(([, t]) => t > 0)
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .slice(0, n)
    .map(([name]) => name);
}

/** Device share over the whole history per model (null when the device was idle throughout). */
export function overallShare(h: ShareHistory): Map<string, number> | null {
  let busy = 0;
  const used = new Map<string, number>();
  for (const p of h.points) {
    busy += p.busySeconds;
    for (const [name, share] of Object.entries(p.device)) used.set(name, (used.get(name) ?? 0) + share * p.busySeconds);
  }
  if (busy <= 0) return null;
  return new Map([...used].map(([name, s]) => [name, s / busy]));
}
