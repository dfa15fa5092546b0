/**
 * What an operator may do to the fleet's placement from the console, each applied by repacking at
 * once (so the router changes before the answer) and recorded in the gateway's audit log:
 *   add_replica / remove_replica  one replica more or fewer (a pinned model gains the least loaded
 *                                 other worker or loses its last one)
 *   move {from, to}               the replica on `from` goes to `to`; the model is pinned there
 *   release                       a pinned model goes back to placement by measured load
 * Only under lpt_packing: the other routing modes send every model to every worker holding it.
 */
import { ServeError, quote } from '@hloserve/common/errors';
import type { Gateway } from '../gateway.js';

export const PLACEMENT_ACTIONS = ['add_replica', 'remove_replica', 'move', 'release'] as const;
export type PlacementActionName = (typeof PLACEMENT_ACTIONS)[number];

export interface PlacementActionRequest {
  readonly action: PlacementActionName;
  readonly from?: string;
  readonly to?: string;
}

export interface PlacementChange {
  readonly model: string;
  readonly before: { readonly workers: readonly string[]; readonly replicas: number; readonly pinned: boolean };
  readonly after: { readonly workers: readonly string[]; readonly replicas: number; readonly pinned: boolean };
}

export const isPlacementAction = (s: string): s is PlacementActionName =>
  (PLACEMENT_ACTIONS as readonly string[]).includes(s);

function snapshot(gw: Gateway, model: string, workers: number) {
  return {
    workers: [...(gw.router.placement().get(model)?.workers ?? [])],
    replicas: gw.placement.desiredReplicas(model, workers),
    pinned: gw.placement.pinnedOn(model) !== undefined,
  };
}

export async function applyPlacementAction(
  gw: Gateway,
  model: string,
  req: PlacementActionRequest,
): Promise<PlacementChange> {
  if (gw.opts.mode !== 'lpt_packing')
    throw new ServeError(
      'HLO_ERR_FAILED_PRECONDITION',
      `placement actions need routing mode lpt_packing; this gateway routes by ${gw.opts.mode} (every holder serves)`,
    );
  if (!gw.fleet.models().includes(model))
    throw new ServeError('HLO_ERR_MODEL_NOT_FOUND', `model ${quote(model)} is not served by any worker`);
  const workers = [...gw.fleet.workers.keys()].sort();
  const before = snapshot(gw, model, workers.length);
  const pins = gw.placement.pinnedOn(model);
  const load = gw.placement.lastResult()?.computeLoad;
  switch (req.action) {
    case 'add_replica': {
      if (before.replicas >= workers.length)
        throw new ServeError(
          'HLO_ERR_FAILED_PRECONDITION',
          `model ${quote(model)} already has a replica on each of the ${workers.length} workers`,
        );
      if (pins) {
        const free = workers.filter((w) => !pins.includes(w));
        free.sort((a, b) => (load?.get(a) ?? 0) - (load?.get(b) ?? 0) || (a < b ? -1 : 1));
        gw.placement.pin(model, [...pins, free[0]!]);
      } else gw.placement.setReplicas(model, before.replicas + 1);
      break;
    }
    case 'remove_replica': {
      if (before.replicas <= 1)
        throw new ServeError('HLO_ERR_FAILED_PRECONDITION', `model ${quote(model)} has one replica; it cannot lose it`);
      if (pins) gw.placement.pin(model, pins.slice(0, -1));
      else gw.placement.setReplicas(model, before.replicas - 1);
      break;
    }
    case 'move': {
      const { from, to } = req;
      if (!from || !to) throw new ServeError('HLO_ERR_INVALID_ARGUMENT', 'move needs "from" and "to" worker names');
      if (!workers.includes(to)) throw new ServeError('HLO_ERR_NOT_FOUND', `no worker named ${quote(to)}`);
      if (!before.workers.includes(from))
        throw new ServeError('HLO_ERR_FAILED_PRECONDITION', `model ${quote(model)} is not placed on ${quote(from)}`);
      if (before.workers.includes(to))
        throw new ServeError('HLO_ERR_FAILED_PRECONDITION', `model ${quote(model)} is already placed on ${quote(to)}`);
      gw.placement.pin(
        model,
        before.workers.map((w) => (w === from ? to : w)),
      );
      break;
    }
    case 'release':
      if (!gw.placement.unpin(model))
        throw new ServeError('HLO_ERR_FAILED_PRECONDITION', `model ${quote(model)} is not pinned`);
      gw.placement.setReplicas(model, before.replicas);
      break;
  }
  await gw.placementTick(true);
  return { model, before, after: snapshot(gw, model, workers.length) };
}
