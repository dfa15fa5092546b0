import type { Server } from 'node:net';

/**
 * Starts `server` (net, http or https) on host:port (0 = any free port) and resolves with the
 * bound port; rejects with the listen error (EADDRINUSE, EACCES) instead of emitting it.
 */
export function listen(server: Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve((server.address() as { port: number }).port));
  });
}
