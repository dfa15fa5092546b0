/**
 * Queries the REST API once and keeps the answer current from the stream: the snapshot replaces
 * the cached value, deltas are folded in by the topic's reducer, both through setQueryData on the
 * same key. Structural changes (a model appears or goes) invalidate the affected detail queries.
 */
import { useQuery, useQueryClient, type QueryKey } from '@tanstack/react-query';
import { useEffect, useSyncExternalStore } from 'react';
import { apiGet } from '../api/http.js';
import { modelKeys } from '../api/keys.js';
import { applyAppendDelta, applyListDelta, applyTick, type Named } from '../api/reducers.js';
import type { AppendDelta, ListDelta, MetricsTick, StreamMessage } from '../api/types.js';
import type { StreamStatus } from '../api/stream.js';
import { stream } from './stream-instance.js';
import { useToken } from './session.js';

type Fold<T> = (prev: T | undefined, msg: StreamMessage) => T | undefined;

function useLive<T>(key: QueryKey, path: string, topic: string, fold: Fold<T>) {
  const qc = useQueryClient();
  const token = useToken();
  const query = useQuery({
    queryKey: key,
    queryFn: ({ signal }) => apiGet<T>(path, signal),
    enabled: token !== null,
    staleTime: Infinity,
  });
  const keyHash = JSON.stringify(key);
  useEffect(() => {
    if (token === null) return;
    return stream.subscribe(topic, (msg) => {
      if (msg.kind === 'snapshot') {
        qc.setQueryData<T>(key, msg.data as T);
        return;
      }
      qc.setQueryData<T>(key, (prev) => fold(prev, msg));
    });
    // key is represented by keyHash; fold is fixed per call site.
  }, [qc, topic, keyHash, token]);
  return query;
}

export function useLiveList<T extends Named>(key: QueryKey, path: string, topic: string) {
  const qc = useQueryClient();
  return useLive<readonly T[]>(key, path, topic, (prev, msg) => {
    const { next, structural } = applyListDelta(prev, msg.data as ListDelta<T>);
    if (structural.length > 0 && topic === 'models') {
      for (const name of structural) void qc.invalidateQueries({ queryKey: modelKeys.detail(name) });
    }
    return next;
  });
}

export function useLiveAppend<T extends { readonly id: string }>(key: QueryKey, path: string, topic: string) {
  return useLive<readonly T[]>(key, path, topic, (prev, msg) => applyAppendDelta(prev, msg.data as AppendDelta<T>));
}

export function useLiveTicks(key: QueryKey, path: string, topic: string) {
  return useLive<readonly MetricsTick[]>(key, path, topic, (prev, msg) => applyTick(prev, msg.data as MetricsTick));
}

/** A detail resource whose topic sends whole new values (snapshot and delta both replace). */
export function useLiveValue<T>(key: QueryKey, path: string, topic: string) {
  return useLive<T>(key, path, topic, (_prev, msg) => msg.data as T);
}

export function useStreamStatus(): StreamStatus {
  return useSyncExternalStore(
    (l) => stream.onStatus(l),
    () => stream.getStatus(),
  );
}
