/**
 * The gateway's placement API (GET /api/v1/placements, POST /api/v1/placements/{model}/{action},
 * GET /api/v1/placements/audit): its types, mirrored by hand from gateway/src/control (the console
 * cannot import the gateway), and its paths. A single worker has no such route (404): no fleet.
 */
const base = '/api/v1/placements';

export const placementRoutes = {
  view: base,
  audit: `${base}/audit`,
  action: (model: string, action: PlacementAction) => `${base}/${encodeURIComponent(model)}/${action}`,
} as const;

export const placementKeys = {
  view: () => ['placements', 'view'] as const,
  audit: () => ['placements', 'audit'] as const,
};

export type PlacementAction = 'add_replica' | 'remove_replica' | 'move' | 'release';

export interface PlacementCell {
  readonly worker: string;
  readonly placed: boolean;
  /** Share of the model's requests sent here (0 to 1); null where the mode uses every holder unweighted. */
  readonly weight: number | null;
  readonly ready: boolean;
  readonly resident: boolean | null;
}

export interface ModelPlacement {
  readonly name: string;
  readonly desiredReplicas: number;
  readonly placed: readonly string[];
  readonly residentOn: readonly string[];
  readonly pinned: boolean;
  readonly utilisation: number | null;
  readonly cells: readonly PlacementCell[];
}

export interface WorkerPlacement {
  readonly name: string;
  readonly ready: boolean;
  /** Has a console port: its screens can be shown (?worker=NAME) when it is ready. */
  readonly console: boolean;
  readonly outstanding: number;
  readonly computeLoad: number | null;
}

export interface PlacementView {
  readonly fleet: true;
  readonly mode: 'round_robin' | 'least_outstanding' | 'lpt_packing';
  readonly actions: boolean;
  readonly repacks: number;
  readonly workers: readonly WorkerPlacement[];
  readonly models: readonly ModelPlacement[];
}

export interface PlacementAuditEntry {
  readonly seq: number;
  readonly at: string;
  readonly actor: string;
  readonly actorName: string;
  readonly action: string;
  readonly target: string;
  readonly before: { readonly workers: readonly string[]; readonly replicas: number; readonly pinned: boolean };
  readonly after: { readonly workers: readonly string[]; readonly replicas: number; readonly pinned: boolean };
}
