/**
 * The gateway's placement API (GET /api/v1/placements, POST /api/v1/placements/{model}/{action},
 * GET /api/v1/placements/audit): its paths and query keys; the view's shapes are the gateway's
 * own (common/src/placement-api.ts). A single worker has no such route (404): no fleet.
 */
export type {
  ModelPlacementView,
  PlacementCell,
  PlacementView,
  RoutingMode,
  WorkerPlacementView,
} from '@hloserve/common/placement-api';

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
