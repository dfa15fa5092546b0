import { notifyManager } from '@tanstack/react-query';
import { FeedPacer } from '../api/feed-pacer.js';
import { routes } from '../api/routes.js';
import { StreamClient, type SocketLike } from '../api/stream.js';
import { tokenStore } from '../api/token-store.js';
import { currentWorker, withWorker } from '../api/worker-choice.js';
import { onLocationChange } from './router.js';

function streamUrl(): string {
  const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
  // Behind a gateway the feed is the chosen worker's (?worker=); read at each connect.
  return `${proto}//${location.host}${withWorker(routes.stream)}`;
}

/** The console's one WebSocket. */
export const stream = new StreamClient({
  url: streamUrl,
  // A browser WebSocket has the shape SocketLike names; its handler types are only narrower.
  createSocket: (url) => new WebSocket(url) as unknown as SocketLike,
  token: () => tokenStore.get(),
});

/**
 * How often live data may reach the screen: feed messages are folded into the cache together, at
 * most once a second (docs/console.md, "Live updates"). One render a second per visible tab.
 */
export const FEED_RENDER_MS = 1000;
export const pacer = new FeedPacer({ intervalMs: FEED_RENDER_MS, batch: (run) => notifyManager.batch(run) });

// The banner's "seq" moves with the flushes, not with every message.
let watermark = 0;
pacer.onFlush(() => (watermark = stream.getStatus().watermark));
export const shownWatermark = (): number => watermark;

tokenStore.subscribe(() => stream.reconnectNow());

// Another worker chosen (the picker, back, forward): its feed from a fresh snapshot, as a resync.
let feedWorker = currentWorker();
onLocationChange(() => {
  const now = currentWorker();
  if (now === feedWorker) return;
  feedWorker = now;
  stream.switchSource();
});

// The feed refusing the token means the token is gone: back to sign-in, as a 401 does.
stream.onStatus((s) => {
  if (s.state === 'denied' && s.refusedCode === 4401 && tokenStore.get() !== null)
    tokenStore.set(
      null,
      `The engine refused your token on the live feed (${s.error ?? 'unauthenticated'}): sign in again.`,
    );
});
