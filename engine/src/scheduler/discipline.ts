/**
 * Which model the dispatch loop serves next.
 * - fair: weighted share of recent device time (see fair-priority.ts); the default.
 * - fifo: the model whose front request is oldest; weights ignored.
 * - edf: the model holding the earliest deadline; requests without one sort last.
 */
export type Discipline = 'fair' | 'fifo' | 'edf';

export const DISCIPLINES: readonly Discipline[] = ['fair', 'fifo', 'edf'];

export function isDiscipline(x: unknown): x is Discipline {
  return typeof x === 'string' && (DISCIPLINES as readonly string[]).includes(x);
}

/** What selection needs to know about a model with dispatchable work; nothing per request. */
export interface SelectionCandidate {
  readonly name: string;
  /** Arrival time of the front request (clock ms). */
  readonly frontArrival: number;
  /** Earliest deadline among the model's queued requests, null when none has one. */
  readonly minDeadline: number | null;
  /** fairPriority of the planned dispatch; only read under `fair`. */
  readonly priority: number;
  /** The front request is a meta model's sub-call: it goes before any model's fresh work. */
  readonly aheadFront?: boolean;
}

/**
 * True when `a` should be served before `b`. Every discipline ends with the same tie-breaks as the
 * reference (older front request, then the lexicographically smaller name) so that selection is
 * deterministic and testable.
 */
export function servesBefore(discipline: Discipline, a: SelectionCandidate, b: SelectionCandidate): boolean {
  // A started pipeline finishes before fresh work starts, whatever the discipline.
  if ((a.aheadFront === true) !== (b.aheadFront === true)) return a.aheadFront === true;
  if (discipline === 'fair' && a.priority !== b.priority) return a.priority > b.priority;
  if (discipline === 'edf') {
    const da = a.minDeadline ?? Infinity;
    const db = b.minDeadline ?? Infinity;
    if (da !== db) return da < db;
  }
  if (a.frontArrival !== b.frontArrival) return a.frontArrival < b.frontArrival;
  return a.name < b.name;
}

/** One pass over the candidates: O(models with work), never O(queued requests). */
export function selectCandidate<C extends SelectionCandidate>(
  discipline: Discipline,
  candidates: Iterable<C>,
): C | undefined {
  let best: C | undefined;
  for (const c of candidates) if (best === undefined || servesBefore(discipline, c, best)) best = c;
  return best;
}
