/**
 * The queues table's rows: the scheduler's answer (weights, device seconds; every 2 s) joined with
 * the live queue of each model from the feed (depth, oldest wait, misses; every 250 ms), busiest
 * first, so that with 2,000 models the ones that matter are on top.
 */
import type { ModelView, QueueModelView } from '../../api/types.js';

export interface QueueRow {
  readonly name: string;
  readonly depth: number;
  readonly oldestWaitMs: number;
  readonly inflight: number;
  readonly deadlineMisses: number;
  readonly weight: number;
  readonly weightShare: number;
  /** Part of the device time over the history (null: the device was idle throughout). */
  readonly deviceShare: number | null;
  readonly contendedShare: number;
}

export const QUEUE_ROWS_SHOWN = 100;

export function queueRows(
  scheduled: readonly QueueModelView[],
  live: readonly ModelView[],
  overall: ReadonlyMap<string, number> | null,
  search: string,
  shown = QUEUE_ROWS_SHOWN,
): { all: QueueRow[]; shown: QueueRow[] } {
  const byName = new Map(live.map((m) => [m.name, m.queue]));
  const needle = search.trim().toLowerCase();
  const all: QueueRow[] = [];
  for (const s of scheduled) {
    if (needle && !s.name.toLowerCase().includes(needle)) continue;
    const q = byName.get(s.name);
    all.push({
      name: s.name,
      depth: q?.depth ?? s.depth,
      oldestWaitMs: q?.oldestWaitMs ?? s.oldestWaitMs,
      inflight: q?.inflight ?? s.inflight,
      deadlineMisses: Math.max(q?.deadlineMisses ?? 0, s.deadlineMisses),
      weight: s.weight,
      weightShare: s.weightShare,
      deviceShare: overall === null ? null : (overall.get(s.name) ?? 0),
      contendedShare: s.contendedShare,
    });
  }
  all.sort(
    (a, b) =>
      b.depth - a.depth ||
      b.oldestWaitMs - a.oldestWaitMs ||
      (b.deviceShare ?? 0) - (a.deviceShare ?? 0) ||
      b.deadlineMisses - a.deadlineMisses ||
      a.name.localeCompare(b.name),
  );
  // Everything busy is shown; idle models fill up to the limit (all of them when searching).
  const busy = (r: QueueRow) => r.depth > 0 || r.inflight > 0 || (r.deviceShare ?? 0) > 0 || r.deadlineMisses > 0;
  const limit = needle ? all.length : Math.max(shown, all.filter(busy).length);
  return { all, shown: all.slice(0, limit) };
}
