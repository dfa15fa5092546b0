/**
 * Binding a grpc-js server and closing it gracefully, the same for the worker's and the
 * gateway's KServe endpoints: stop taking calls, let in-flight ones finish, force after a grace.
 */
import { type Server, ServerCredentials } from '@grpc/grpc-js';
import { setClampedTimeout } from './timers.js';

export interface GrpcServerHandle {
  readonly server: Server;
  readonly port: number;
  /** Stops accepting calls and waits for in-flight ones (forcing after `graceMs`). */
  close(graceMs?: number): Promise<void>;
}

/** Binds `server` on host:port (0: any free port), plaintext unless TLS credentials are given. */
export async function listenGrpc(
  server: Server,
  host: string,
  port: number,
  credentials: ServerCredentials = ServerCredentials.createInsecure(),
): Promise<GrpcServerHandle> {
  const bound = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${host}:${port}`, credentials, (err, p) => (err ? reject(err) : resolve(p))),
  );
  return {
    server,
    port: bound,
    close: (graceMs = 10_000) =>
      new Promise<void>((resolve) => {
        const timer = setClampedTimeout(() => {
          server.forceShutdown();
          resolve();
        }, graceMs);
        timer.unref();
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      }),
  };
}
