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

const onVisibility = (l: () => void) => {
  document.addEventListener('visibilitychange', l);
  return () => document.removeEventListener('visibilitychange', l);
};

/**
 * Whether the page is shown. A hidden tab (one of many an operator keeps open) holds no feed
 * subscriptions: the engine sends it nothing and it renders nothing; shown again, each topic comes
 * back with a fresh snapshot, as after a reconnect.
 */
export function usePageVisible(): boolean {
  return useSyncExternalStore(
    onVisibility,
    () => document.visibilityState !== 'hidden',
    () => true,
  );
}

export function useTopic<T>(topic: string, key: QueryKey, fold: Fold<T>, enabled = true): void {
  const qc = useQueryClient();
  const token = useToken();
  const visible = usePageVisible();
  const keyHash = JSON.stringify(key);
  useEffect(() => {
    if (token === null || !enabled || !visible) return;
    return stream.subscribe(topic, (msg) => qc.setQueryData<T>(key, (prev) => fold(prev, msg)));
    // key is represented by keyHash; fold is a module-level function per call site.
  }, [qc, topic, keyHash, token, enabled, visible]);
}

export function useStreamStatus(): StreamStatus {
  return useSyncExternalStore(
    (l) => stream.onStatus(l),
    () => stream.getStatus(),
  );
}
