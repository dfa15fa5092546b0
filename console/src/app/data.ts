/** The console's queries and mutations, one hook per resource, all on the key factories. */
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { apiGet, apiRequest } from '../api/http.js';
import {
  auditKeys,
  eventKeys,
  metricsKeys,
  modelKeys,
  queueKeys,
  settingsKeys,
  tokenKeys,
  topics,
  workerKeys,
} from '../api/keys.js';
import {
  foldDevices,
  foldLog,
  foldMetrics,
  foldModels,
  foldQueues,
  foldResidency,
  noMetrics,
} from '../api/reducers.js';
import { routes } from '../api/routes.js';
import { emptyShareHistory, foldQueueSample, type ShareHistory } from '../views/queues/share.js';
import type {
  AuditRecord,
  BundleVersionView,
  ModelHistogramsView,
  ModelIoView,
  QueuesView,
  TryResult,
  CreatedToken,
  EventRecord,
  MetricSample,
  MetricsState,
  ModelAction,
  ModelView,
  ModelPolicyView,
  Scope,
  Settings,
  TokenInfo,
  WorkerView,
} from '../api/types.js';
import { useTopic } from './live.js';
import { useToken } from './session.js';

/** Every model, kept current by the models, residency and queues topics. */
export function useModels<R = readonly ModelView[]>(select?: (models: readonly ModelView[]) => R) {
  const token = useToken();
  const key = modelKeys.list();
  useTopic(topics.models, key, foldModels);
  useTopic(topics.residency, key, foldResidency);
  useTopic(topics.queues, key, foldQueues);
  return useQuery({
    queryKey: key,
    queryFn: ({ signal }) => apiGet<readonly ModelView[]>(routes.models, signal),
    enabled: token !== null,
    staleTime: Infinity,
    select,
  });
}

/** One model: a view of the same list (one owner per fact, no second copy). */
export function useModel(name: string) {
  return useModels((list) => list.find((m) => m.name === name) ?? null);
}

export function useWorkers() {
  const token = useToken();
  const key = workerKeys.list();
  useTopic(topics.residency, key, foldDevices);
  return useQuery({
    queryKey: key,
    queryFn: ({ signal }) => apiGet<readonly WorkerView[]>(routes.workers, signal),
    enabled: token !== null,
    staleTime: Infinity,
  });
}

/**
 * The metrics topic: each model's latest 1 Hz sample and five minutes of the fleet's totals, from
 * the feed only (the engine keeps per-model history). `select` picks what a view shows, so that a
 * view of the latest samples is not rendered again by an idle tick.
 */
export function useMetrics<R = MetricsState>(select?: (state: MetricsState) => R) {
  const qc = useQueryClient();
  const key = metricsKeys.state();
  useTopic(topics.metrics, key, foldMetrics);
  return useQuery({
    queryKey: key,
    queryFn: () => qc.getQueryData<MetricsState>(key) ?? noMetrics,
    staleTime: Infinity,
    select,
  });
}

export function useModelMetrics(name: string) {
  const token = useToken();
  return useQuery({
    queryKey: modelKeys.metrics(name),
    queryFn: ({ signal }) => apiGet<readonly MetricSample[]>(routes.modelMetrics(name), signal),
    enabled: token !== null,
    refetchInterval: 5_000,
  });
}

export function useEvents() {
  const token = useToken();
  const key = eventKeys.list();
  useTopic(topics.events, key, (prev: readonly EventRecord[] | undefined, msg) => foldLog(prev, msg));
  return useQuery({
    queryKey: key,
    queryFn: ({ signal }) => latestEvents(signal),
    enabled: token !== null,
    staleTime: Infinity,
  });
}

/**
 * The newest 1000 events, newest first. The route pages oldest first, so this pages forward
 * (at most 20 pages) keeping the last ones; the feed adds what happens next.
 */
async function latestEvents(signal: AbortSignal): Promise<readonly EventRecord[]> {
  let kept: EventRecord[] = [];
  let after = 0;
  for (let page = 0; page < 20; page++) {
    const rows = await apiGet<readonly EventRecord[]>(routes.events(after), signal);
    kept = [...kept, ...rows].slice(-1000);
    if (rows.length < 1000) break;
    after = rows[rows.length - 1]!.seq;
  }
  return kept.reverse();
}

/** The audit log has no topic: it is refetched while shown and after every mutation. */
export function useAudit(enabled: boolean) {
  return useQuery({
    queryKey: auditKeys.list(),
    queryFn: ({ signal }) => apiGet<readonly AuditRecord[]>(routes.audit, signal),
    enabled,
    refetchInterval: 10_000,
  });
}

/** The settings; the Settings screen refetches them every 10 s for the store's health. */
export function useSettings(refetchMs: number | false = false) {
  const token = useToken();
  return useQuery({
    queryKey: settingsKeys.all(),
    queryFn: ({ signal }) => apiGet<Settings>(routes.settings, signal),
    enabled: token !== null,
    staleTime: 60_000,
    refetchInterval: refetchMs,
  });
}

export function useTokens(enabled: boolean) {
  return useQuery({
    queryKey: tokenKeys.list(),
    queryFn: ({ signal }) => apiGet<readonly TokenInfo[]>(routes.tokens, signal),
    enabled,
  });
}

/** A model action; the answer (the model after it) lands in the list at once, the feed follows. */
export function useModelAction() {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: ({ name, action, pinTo }: { name: string; action: ModelAction; pinTo?: 'system' | 'device' }) =>
      apiRequest<ModelView | { model: string; state: string }>(routes.modelAction(name, action), {
        method: 'POST',
        body: action === 'pin' ? { residency: pinTo ?? 'device' } : undefined,
      }),
    onSuccess: (res) => {
      const m = res.data;
      if ('batchSizes' in m)
        qc.setQueryData<readonly ModelView[]>(modelKeys.list(), (prev) =>
          prev?.map((x) => (x.name === m.name ? m : x)),
        );
    },
    onSettled: () => void qc.invalidateQueries({ queryKey: auditKeys.list() }),
  });
}

export function usePolicyUpdate(name: string) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (patch: Partial<ModelPolicyView>) =>
      apiRequest<ModelView>(routes.modelPolicy(name), { method: 'PATCH', body: patch }),
    onSuccess: (res) =>
      qc.setQueryData<readonly ModelView[]>(modelKeys.list(), (prev) =>
        prev?.map((x) => (x.name === res.data.name ? res.data : x)),
      ),
    onSettled: () => void qc.invalidateQueries({ queryKey: auditKeys.list() }),
  });
}

export function useCreateToken() {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: async (body: { name: string; scope: Scope; ttlSeconds?: number }) =>
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

/**
 * The control mode, from the worker (the session names the token, not the node). It is fixed for
 * the worker's life, so this reads the worker list without holding the residency topic: the shell
 * shows the mode on every screen, and holding the topic there made every screen take (and render)
 * a residency delta each second under load. Selected, so device changes folded in by a screen that
 * does hold the topic do not re-render the shell.
 */
export function useControlMode(): string | undefined {
  const token = useToken();
  return useQuery({
    queryKey: workerKeys.list(),
    queryFn: ({ signal }) => apiGet<readonly WorkerView[]>(routes.workers, signal),
    enabled: token !== null,
    staleTime: Infinity,
    select: (workers) => workers[0]?.modelControlMode,
  }).data;
}

/**
 * One model fetched by itself every 5 s while a detail tab needs its counters: the feed keeps the
 * list's state, residency and queues live, not the statistics (they change with every request).
 */
export function useModelStats(name: string) {
  const token = useToken();
  return useQuery({
    queryKey: modelKeys.detail(name),
    queryFn: ({ signal }) => apiGet<ModelView>(routes.model(name), signal),
    enabled: token !== null,
    refetchInterval: 5_000,
    select: (m) => m.stats,
  });
}

/** A model's tensors and bundle facts: they change only with a new version. */
export function useModelIo(name: string) {
  const token = useToken();
  return useQuery({
    queryKey: modelKeys.io(name),
    queryFn: ({ signal }) => apiGet<ModelIoView>(routes.modelIo(name), signal),
    enabled: token !== null,
    staleTime: 30_000,
    retry: false,
  });
}

export function useModelHistograms(name: string) {
  const token = useToken();
  return useQuery({
    queryKey: modelKeys.histograms(name),
    queryFn: ({ signal }) => apiGet<ModelHistogramsView>(routes.modelHistograms(name), signal),
    enabled: token !== null,
    refetchInterval: 5_000,
  });
}

export function useModelVersions(name: string) {
  const token = useToken();
  return useQuery({
    queryKey: modelKeys.versions(name),
    queryFn: ({ signal }) => apiGet<readonly BundleVersionView[]>(routes.modelVersions(name), signal),
    enabled: token !== null,
  });
}

/** Rollback answers the versions after it; the model's new tensors are fetched again. */
export function useRollback(name: string) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: async (version: string) =>
      (
        await apiRequest<readonly BundleVersionView[]>(routes.modelRollback(name), {
          method: 'POST',
          body: { version },
        })
      ).data,
    onSuccess: (list) => qc.setQueryData(modelKeys.versions(name), list),
    onSettled: () => {
      void qc.invalidateQueries({ queryKey: modelKeys.io(name) });
      void qc.invalidateQueries({ queryKey: modelKeys.versions(name) });
      void qc.invalidateQueries({ queryKey: auditKeys.list() });
    },
  });
}

/** One try-it inference (the engine runs the bundle's reference input). */
export function useTryIt(name: string) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: async () => (await apiRequest<TryResult>(routes.modelTry(name), { method: 'POST' })).data,
    onSettled: () => {
      void qc.invalidateQueries({ queryKey: modelKeys.histograms(name) });
      void qc.invalidateQueries({ queryKey: modelKeys.detail(name) });
    },
  });
}

/**
 * The scheduler, polled every 2 s while shown (weights and device seconds; depth and waits also
 * come live on the queues topic through useModels). Each answer is folded into the share history.
 */
export function useQueues() {
  const token = useToken();
  const qc = useQueryClient();
  return useQuery({
    queryKey: queueKeys.now(),
    queryFn: async ({ signal }) => {
      const q = await apiGet<QueuesView>(routes.queues, signal);
      qc.setQueryData<ShareHistory>(queueKeys.history(), (prev) => foldQueueSample(prev, q));
      return q;
    },
    enabled: token !== null,
    refetchInterval: 2_000,
  });
}

export function useQueueHistory() {
  const qc = useQueryClient();
  return useQuery({
    queryKey: queueKeys.history(),
    queryFn: () => qc.getQueryData<ShareHistory>(queueKeys.history()) ?? emptyShareHistory,
    staleTime: Infinity,
  });
}

/** Changes the device's budget for evictable weights (admin; audited; idle models over it are evicted). */
export function useSetWeightBudget() {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (weightBudgetBytes: number) =>
      apiRequest<Settings>(routes.settings, { method: 'PATCH', body: { weightBudgetBytes } }),
    onSettled: () => {
      void qc.invalidateQueries({ queryKey: settingsKeys.all() });
      void qc.invalidateQueries({ queryKey: workerKeys.list() });
      void qc.invalidateQueries({ queryKey: modelKeys.list() });
      void qc.invalidateQueries({ queryKey: auditKeys.list() });
    },
  });
}

/** Changes the discipline for every model (admin; audited). */
export function useSetDiscipline() {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (discipline: Settings['discipline']) =>
      apiRequest<Settings>(routes.settings, { method: 'PATCH', body: { discipline } }),
    onSettled: () => {
      void qc.invalidateQueries({ queryKey: settingsKeys.all() });
      void qc.invalidateQueries({ queryKey: queueKeys.now() });
      void qc.invalidateQueries({ queryKey: auditKeys.list() });
    },
  });
}
