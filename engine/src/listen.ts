import type { Server } from 'node:http';

/** Starts `server` on host:port (0 = any free port) and resolves with the bound port. */
export function listen(server: Server, host: string, port: number): Promise<{ server: Server; port: number }> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve({ server, port: (server.address() as { port: number }).port }));
  });
}
