/**
 * Feeds a query key from a topic of the live feed: every message is folded into the cached value
 * with setQueryData, so REST answers and feed messages meet in one cache.
 */
import { notifyManager, useQueryClient, type QueryKey } from '@tanstack/react-query';
import { useEffect, useSyncExternalStore } from 'react';
import type { StreamStatus } from '../api/stream.js';
import type { StreamMessage } from '../api/types.js';
import { useToken } from './session.js';
import { pacer, shownWatermark, stream } from './stream-instance.js';

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
    // Written at the pacer's rate (at most once a second, a snapshot at once), in arrival order.
    return stream.subscribe(topic, (msg) =>
      pacer.enqueue(() => qc.setQueryData<T>(key, (prev) => fold(prev, msg)), msg.kind === 'snapshot'),
    );
    // key is represented by keyHash; fold is a module-level function per call site.
  }, [qc, topic, keyHash, token, enabled, visible]);
}

/** The feed's connection state, without the watermark (which moves with every message). */
export type LinkStatus = Omit<StreamStatus, 'watermark'>;

let linkStatus: LinkStatus | null = null;
const sameLink = (a: LinkStatus, b: LinkStatus) =>
  a.state === b.state &&
  a.attempt === b.attempt &&
  a.nextRetryAtMs === b.nextRetryAtMs &&
  a.error === b.error &&
  a.refusedCode === b.refusedCode;

/** Renders when the connection changes, not on every message. */
export function useStreamStatus(): LinkStatus {
  return useSyncExternalStore(
    (l) => stream.onStatus(l),
    () => {
      const { watermark: _, ...s } = stream.getStatus();
      if (linkStatus === null || !sameLink(linkStatus, s)) linkStatus = s;
      return linkStatus;
    },
  );
}

/**
 * The highest seq seen, as of the last paced update (shown at the pace the data is). Its change is
 * scheduled with the flush's query notifications (TanStack delivers those in a later task): told
 * at once, the banner would render and draw on its own, and the numbers a frame later.
 */
const onWatermark = (l: () => void) => pacer.onFlush(() => notifyManager.schedule(l));
export function useWatermark(): number {
  return useSyncExternalStore(onWatermark, shownWatermark);
}
