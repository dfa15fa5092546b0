/**
 * What the placement screen derives from the gateway's view, kept pure so it is tested without a
 * browser: each model's state of desired (placed) against actual (resident), and whether an action
 * is allowed, with the reason when it is not.
 */
import type { ModelPlacementView, PlacementAction, PlacementCell, PlacementView } from '../../api/placement.js';
import type { Scope } from '../../api/types.js';
import type { Verdict } from '../../app/permissions.js';
import { allows } from '../../app/session.js';

/**
 * in_place   resident exactly where it is placed
 * warming    placed on a worker where its weights are not resident yet (they load on first traffic)
 * lingering  resident on a worker it is no longer placed on (evicted under memory pressure)
 * unknown    a worker's metrics could not be read
 */
export type PlacementState = 'in_place' | 'warming' | 'lingering' | 'unknown';

export function placementState(m: ModelPlacementView): PlacementState {
  if (m.cells.some((c) => c.resident === null && c.placed)) return 'unknown';
  if (m.cells.some((c) => c.placed && c.resident === false)) return 'warming';
  if (m.cells.some((c) => !c.placed && c.resident === true)) return 'lingering';
  return 'in_place';
}

export const stateLabel: Record<PlacementState, string> = {
  in_place: 'in place',
  warming: 'warming (placed, not resident yet)',
  lingering: 'resident where no longer placed',
  unknown: 'residency unknown',
};

const ok: Verdict = { allowed: true, whyNot: null };
const no = (whyNot: string): Verdict => ({ allowed: false, whyNot });

export function placementVerdict(
  action: PlacementAction,
  m: ModelPlacementView,
  view: Pick<PlacementView, 'actions' | 'mode' | 'workers'>,
  scope: Scope | undefined,
): Verdict {
  if (!allows(scope, 'operator')) return no('needs an operator or admin token');
  if (!view.actions) return no(`routing mode ${view.mode}: every worker holding a model serves it`);
  switch (action) {
    case 'add_replica':
      return m.desiredReplicas >= view.workers.length ? no('a replica on every worker already') : ok;
    case 'remove_replica':
      return m.desiredReplicas <= 1 ? no('one replica: it cannot lose it') : ok;
    case 'move':
      return m.placed.length >= view.workers.length ? no('placed on every worker') : ok;
    case 'release':
      return m.pinned ? ok : no('placed by measured load already');
  }
}

/** Workers a replica of `m` could move to (not already placed there). */
export function moveTargets(m: ModelPlacementView, view: Pick<PlacementView, 'workers'>): string[] {
  return view.workers.map((w) => w.name).filter((w) => !m.placed.includes(w));
}

/**
 * The share of `m`'s traffic a placed cell takes, as a percentage label, where it says something:
 * only for a model placed on more than one worker (one replica takes everything).
 */
export function weightLabel(m: ModelPlacementView, c: PlacementCell): string | null {
  if (!c.placed || c.weight === null || m.placed.length < 2) return null;
  return `${Math.round(c.weight * 100)} %`;
}
