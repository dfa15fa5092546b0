import type { Server } from 'node:http';

/** How often a closing server's idle connections are closed (closeIdleUntilClosed). */
export const IDLE_CLOSE_EVERY_MS = 100;

/**
 * Closes `server`'s idle keep-alive connections now and then every `everyMs` until it has closed.
 * Call it when the server begins to close. Node's `close()` closes the connections idle at that
 * moment only: one whose request was still in flight goes idle after its answer and stays open
 * until its keep-alive timeout (Fastify's default: 72 s), holding the close, so a graceful stop
 * under HTTP load waited that long for clients that had nothing more to send. The timer is
 * unref'd: it never keeps a process alive by itself.
 */
export function closeIdleUntilClosed(server: Server, everyMs = IDLE_CLOSE_EVERY_MS): void {
  server.closeIdleConnections();
  const timer = setInterval(() => server.closeIdleConnections(), everyMs);
  timer.unref();
  server.once('close', () => clearInterval(timer));
}

/** `server.close()` with closeIdleUntilClosed: resolves once every connection has ended. */
export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    closeIdleUntilClosed(server);
  });
}
