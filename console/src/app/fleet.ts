/**
 * The fleet's placement, from the gateway. A single worker answers 404 on the route, which the
 * console reads as "no fleet": the Placement screen and its nav entry then stay hidden.
 */
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { ApiError } from '../api/errors.js';
import { apiGet, apiRequest } from '../api/http.js';
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
        return await apiGet<PlacementView>(placementRoutes.view, signal);
      } catch (err) {
        if (err instanceof ApiError && err.status === 404) return null;
        throw err;
      }
    },
    enabled: token !== null,
    retry: false,
    refetchInterval: refetchMs,
  });
}

/** True when the console is served by a gateway in front of several workers. */
export function useHasFleet(): boolean {
  return usePlacements(false).data?.fleet === true;
}

export function usePlacementAudit(enabled: boolean) {
  return useQuery({
    queryKey: placementKeys.audit(),
    queryFn: ({ signal }) => apiGet<readonly PlacementAuditEntry[]>(placementRoutes.audit, signal),
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
      }),
    onSettled: () => {
      void qc.invalidateQueries({ queryKey: placementKeys.view() });
      void qc.invalidateQueries({ queryKey: placementKeys.audit() });
    },
  });
}
