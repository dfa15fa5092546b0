/** The console's queries and mutations, one hook per resource, all on the key factories. */
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { apiGet, apiRequest } from '../api/http.js';
import {
  auditKeys,
  eventKeys,
  metricsKeys,
  modelKeys,
  settingsKeys,
  tokenKeys,
  topics,
  workerKeys,
} from '../api/keys.js';
import { routes } from '../api/routes.js';
import type {
  AuditEntry,
  CreatedToken,
  EngineEvent,
  ModelAction,
  ModelDetail,
  ModelSummary,
  Policy,
  Scope,
  Settings,
  TokenInfo,
  WorkerInfo,
} from '../api/types.js';
import { useLiveAppend, useLiveList, useLiveTicks, useLiveValue } from './live.js';
import { useToken } from './session.js';

export const useModels = () => useLiveList<ModelSummary>(modelKeys.list(), routes.models, topics.models);
export const useWorkers = () => useLiveList<WorkerInfo>(workerKeys.list(), routes.workers, topics.workers);
export const useMetrics = () => useLiveTicks(metricsKeys.series(), routes.metrics, topics.metrics);
export const useAudit = () => useLiveAppend<AuditEntry>(auditKeys.list(), routes.audit, topics.audit);
export const useEvents = () => useLiveAppend<EngineEvent>(eventKeys.list(), routes.events, topics.events);
export const useModel = (name: string) =>
  useLiveValue<ModelDetail>(modelKeys.detail(name), routes.model(name), topics.model(name));

export function useSettings() {
  const token = useToken();
  return useQuery({
    queryKey: settingsKeys.all(),
    queryFn: ({ signal }) => apiGet<Settings>(routes.settings, signal),
    enabled: token !== null,
  });
}

export function useTokens(enabled: boolean) {
  return useQuery({
    queryKey: tokenKeys.list(),
    queryFn: ({ signal }) => apiGet<readonly TokenInfo[]>(routes.tokens, signal),
    enabled,
  });
}

export function useModelAction() {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: ({ name, action }: { name: string; action: ModelAction }) =>
      apiRequest(routes.modelAction(name, action), { method: 'POST' }),
    onSettled: (_d, _e, v) => {
      void qc.invalidateQueries({ queryKey: modelKeys.detail(v.name) });
    },
  });
}

export function usePolicyUpdate(name: string) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (policy: Policy) => apiRequest<Policy>(routes.policy(name), { method: 'PUT', body: policy }),
    onSuccess: () => void qc.invalidateQueries({ queryKey: modelKeys.detail(name) }),
  });
}

export function useCreateToken() {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: async (body: { name: string; scope: Scope }) =>
      (await apiRequest<CreatedToken>(routes.tokens, { method: 'POST', body })).data,
    onSuccess: () => void qc.invalidateQueries({ queryKey: tokenKeys.list() }),
  });
}

export function useRevokeToken() {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (id: string) => apiRequest(routes.token(id), { method: 'DELETE' }),
    onSuccess: () => void qc.invalidateQueries({ queryKey: tokenKeys.list() }),
  });
}
