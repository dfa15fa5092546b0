import { notifyManager } from '@tanstack/react-query';
import { FeedPacer } from '../api/feed-pacer.js';
import { feedScope, FeedRelay, webLock, type ChannelLike, type LockManagerLike } from '../api/feed-relay.js';
import { routes } from '../api/routes.js';
import { StreamClient, type SocketLike } from '../api/stream.js';
import { createLiveIntervalStore } from '../api/live-interval-store.js';
import { localWatchedStorage, tokenStore } from '../api/token-store.js';
import { currentWorker, withWorker } from '../api/worker-choice.js';
import { onLocationChange } from './router.js';

function streamUrl(): string {
  const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
  // Behind a gateway the feed is the chosen worker's (?worker=); read at each connect.
  return `${proto}//${location.host}${withWorker(routes.stream)}`;
}

const wireClient = () =>
  new StreamClient({
    url: streamUrl,
    // A browser WebSocket has the shape SocketLike names; its handler types are only narrower.
    createSocket: (url) => new WebSocket(url) as unknown as SocketLike,
    token: () => tokenStore.get(),
  });

/** What the screens read the feed through: a tab's own socket, or the browser's one through the relay. */
export type FeedSource = Pick<StreamClient, 'subscribe' | 'onStatus' | 'getStatus'>;

const locks = (globalThis.navigator as { locks?: LockManagerLike } | undefined)?.locks;
const relay =
  locks && typeof BroadcastChannel === 'function'
    ? new FeedRelay({
        scope: () => feedScope(currentWorker(), tokenStore.get()),
        openChannel: (name) => new BroadcastChannel(name) as unknown as ChannelLike,
        acquire: webLock(locks),
        createClient: wireClient,
      })
    : null;
// Without Web Locks or BroadcastChannel each tab keeps its own socket.
const own = relay === null ? wireClient() : null;

/** The console's live feed: one WebSocket per browser (per worker and token), shared by its tabs. */
export const stream: FeedSource = relay ?? own!;
if (relay) {
  addEventListener('pagehide', () => relay.suspend());
  addEventListener('pageshow', (e) => e.persisted && relay.resume());
}

/**
 * How often live data may reach the screen, this browser's choice (Settings; every second unless
 * changed): feed messages are folded into the cache together, at most once per interval
 * (docs/console.md, "Live updates"). One render per interval per visible tab.
 */
export const liveInterval = createLiveIntervalStore(localWatchedStorage);
export const pacer = new FeedPacer({ intervalMs: liveInterval.get(), batch: (run) => notifyManager.batch(run) });
liveInterval.subscribe((ms) => pacer.setIntervalMs(ms));

// The banner's "seq" moves with the flushes, not with every message.
let watermark = 0;
pacer.onFlush(() => (watermark = stream.getStatus().watermark));
export const shownWatermark = (): number => watermark;

tokenStore.subscribe(() => (relay ? relay.rescope() : own!.reconnectNow()));

// Another worker chosen (the picker, back, forward): its feed from a fresh snapshot, as a resync.
let feedWorker = currentWorker();
onLocationChange(() => {
  const now = currentWorker();
  if (now === feedWorker) return;
  feedWorker = now;
  if (relay) relay.rescope(true);
  else own!.switchSource();
});

// The feed refusing the token means the token is gone: back to sign-in, as a 401 does.
stream.onStatus((s) => {
  if (s.state === 'denied' && s.refusedCode === 4401 && tokenStore.get() !== null)
    tokenStore.set(
      null,
      `The engine refused your token on the live feed (${s.error ?? 'unauthenticated'}): sign in again.`,
    );
});
