/**
 * The fleet's placement as the console shows it: models x workers, for each cell whether the
 * model is placed there (desired: where the router sends its traffic), held ready there (the
 * worker's repository index) and resident (its weights on that worker's device, from the worker's
 * `hloserve_model_resident` gauge); per model the desired replica count and whether an operator
 * pinned it. Facts are read from their owners (fleet, router, placement controller, workers'
 * metrics) on each request, never copied.
 */
import type { ModelPlacementView, PlacementCell, PlacementView } from '@hloserve/common/placement-api';
import type { Gateway } from '../gateway.js';

export type {
  ModelPlacementView,
  PlacementCell,
  PlacementView,
  WorkerPlacementView,
} from '@hloserve/common/placement-api';

const RESIDENT = /^hloserve_model_resident\{[^}]*model="((?:[^"\\]|\\.)*)"[^}]*\} (\S+)/gm;

/** Per worker: the models whose weights are resident, or null when its metrics are unreadable. */
async function residency(gw: Gateway): Promise<Map<string, Set<string> | null>> {
  const out = new Map<string, Set<string> | null>();
  await Promise.all(
    [...gw.fleet.workers.values()].map(async (w) => {
      out.set(w.name, null);
      if (!w.address.metrics || !w.ready) return;
      try {
        const r = await fetch(`http://${w.address.metrics}/metrics`, { signal: AbortSignal.timeout(2000) });
        const text = await r.text();
        const set = new Set<string>();
        for (const m of text.matchAll(RESIDENT)) if (Number(m[2]) > 0) set.add(m[1]!.replace(/\\(.)/g, '$1'));
        out.set(w.name, set);
      } catch {
        /* unknown: null */
      }
    }),
  );
  return out;
}

export async function placementView(gw: Gateway): Promise<PlacementView> {
  const workers = [...gw.fleet.workers.keys()].sort();
  const lpt = gw.opts.mode === 'lpt_packing';
  const placed = gw.router.placement();
  const last = gw.placement.lastResult();
  const util = gw.placement.estimator.utilisation(gw.fleet.models());
  const resident = await residency(gw);
  const models = gw.fleet.models().map((name): ModelPlacementView => {
    const holders = gw.fleet.holders(name);
    const p = lpt ? placed.get(name) : undefined;
    const on = p?.workers ?? holders;
    const cells = workers.map((worker): PlacementCell => ({
      worker,
      placed: on.includes(worker),
      weight: p ? (p.weights[p.workers.indexOf(worker)] ?? 0) : null,
      ready: holders.includes(worker),
      resident: resident.get(worker)?.has(name) ?? null,
    }));
    const u = util.get(name);
    return {
      name,
      desiredReplicas: lpt ? gw.placement.desiredReplicas(name, workers.length) : holders.length,
      placed: [...on],
      residentOn: cells.filter((c) => c.resident === true).map((c) => c.worker),
      pinned: gw.placement.pinnedOn(name) !== undefined,
      utilisation: u !== undefined && u > 0 ? u : null,
      cells,
    };
  });
  return {
    fleet: true,
    mode: gw.opts.mode,
    actions: lpt,
    repacks: gw.placement.repacks,
    workers: workers.map((name) => {
      const w = gw.fleet.workers.get(name)!;
      return {
        name,
        ready: w.ready,
        console: Boolean(w.address.console),
        outstanding: w.outstanding,
        computeLoad: last?.computeLoad.get(name) ?? null,
      };
    }),
    models,
  };
}
