import { routes } from '../api/routes.js';
import { StreamClient, type SocketLike } from '../api/stream.js';
import { tokenStore } from '../api/token-store.js';

function streamUrl(): string {
  const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
  return `${proto}//${location.host}${routes.stream}`;
}

/** The console's one WebSocket. */
export const stream = new StreamClient({
  url: streamUrl,
  // A browser WebSocket has the shape SocketLike names; its handler types are only narrower.
  createSocket: (url) => new WebSocket(url) as unknown as SocketLike,
  token: () => tokenStore.get(),
});

tokenStore.subscribe(() => stream.reconnectNow());
