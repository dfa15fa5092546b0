/**
 * Feeds a query key from a topic of the live feed: every message is folded into the cached value
 * with setQueryData, so REST answers and feed messages meet in one cache.
 */
import { useQueryClient, type QueryKey } from '@tanstack/react-query';
import { useEffect, useSyncExternalStore } from 'react';
import type { StreamStatus } from '../api/stream.js';
import type { StreamMessage } from '../api/types.js';
import { useToken } from './session.js';
import { stream } from './stream-instance.js';

export type Fold<T> = (prev: T | undefined, msg: StreamMessage) => T | undefined;

export function useTopic<T>(topic: string, key: QueryKey, fold: Fold<T>, enabled = true): void {
  const qc = useQueryClient();
  const token = useToken();
  const keyHash = JSON.stringify(key);
  useEffect(() => {
    if (token === null || !enabled) return;
    return stream.subscribe(topic, (msg) => qc.setQueryData<T>(key, (prev) => fold(prev, msg)));
    // key is represented by keyHash; fold is a module-level function per call site.
  }, [qc, topic, keyHash, token, enabled]);
}

export function useStreamStatus(): StreamStatus {
  return useSyncExternalStore(
    (l) => stream.onStatus(l),
    () => stream.getStatus(),
  );
}
