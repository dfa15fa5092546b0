/**
 * The fleet's placement, from the gateway. A single worker answers 404 on the route, which the
 * console reads as "no fleet": the Placement screen and its nav entry then stay hidden.
 */
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { ApiError } from '../api/errors.js';
import { apiRequest } from '../api/http.js';
import {
  placementKeys,
  placementRoutes,
  type PlacementAction,
  type PlacementAuditEntry,
  type PlacementView,
} from '../api/placement.js';
import { useToken } from './session.js';

export function usePlacements(refetchMs: number | false = 3_000) {
  const token = useToken();
  return useQuery({
    queryKey: placementKeys.view(),
    queryFn: async ({ signal }) => {
      try {
        // The gateway's own route, asked without a worker: a stale ?worker= must not hide the fleet.
        return (await apiRequest<PlacementView>(placementRoutes.view, { signal, worker: null })).data;
      } catch (err) {
        if (err instanceof ApiError && err.status === 404) return null;
        throw err;
      }
    },
    enabled: token !== null,
    retry: false,
    // A single worker (404, null) has no fleet to watch: no polling there.
    refetchInterval: (q) => (q.state.data === null ? false : refetchMs),
  });
}

export function usePlacementAudit(enabled: boolean) {
  return useQuery({
    queryKey: placementKeys.audit(),
    queryFn: async ({ signal }) =>
      (await apiRequest<readonly PlacementAuditEntry[]>(placementRoutes.audit, { signal, worker: null })).data,
    enabled,
    refetchInterval: 10_000,
  });
}

export function usePlacementAction() {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (v: { model: string; action: PlacementAction; from?: string; to?: string }) =>
      apiRequest(placementRoutes.action(v.model, v.action), {
        method: 'POST',
        body: v.action === 'move' ? { from: v.from, to: v.to } : {},
        worker: null,
      }),
    onSettled: () => {
      void qc.invalidateQueries({ queryKey: placementKeys.view() });
      void qc.invalidateQueries({ queryKey: placementKeys.audit() });
    },
  });
}
