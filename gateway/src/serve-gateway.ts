/**
 * Starts a Gateway and its listeners: KServe gRPC, KServe HTTP, /metrics + health, and the console,
 * each on TLS from one certificate when `listen.tls` is set.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { DEFAULT_GATEWAY, Gateway, type GatewayOptions } from './gateway.js';
import { startGatewayGrpc } from './grpc-server.js';
import { startGatewayHttp } from './http-server.js';
import { type GatewayConsoleHandle, startGatewayConsole } from './control/console-server.js';
import { secureOptions, type GatewayTls } from './tls.js';
import { closeServer } from '@hloserve/common/idle-connections';

export interface GatewayListen {
  readonly host: string;
  readonly grpcPort: number;
  readonly httpPort: number;
  /** -1: no metrics listener. */
  readonly metricsPort: number;
  /** The console and control API for the fleet; -1 or absent: none. */
  readonly consolePort?: number;
  /** Serve every listener over TLS; null or absent: plaintext. */
  readonly tls?: GatewayTls | null;
}

export interface RunningGateway {
  readonly gateway: Gateway;
  readonly ports: { readonly grpc: number; readonly http: number; readonly metrics: number; readonly console: number };
  readonly console: GatewayConsoleHandle | null;
  stop(): Promise<void>;
}

export async function serveGateway(
  options: Partial<GatewayOptions> & Pick<GatewayOptions, 'workers'>,
  listen: GatewayListen,
  log: (msg: string, fields: Record<string, unknown>) => void = () => {},
): Promise<RunningGateway> {
  const gateway = new Gateway({ ...DEFAULT_GATEWAY, ...options });
  try {
    await gateway.start();
  } catch (err) {
    // The fleet's health timers already run; a start that fails (a placement store that cannot be
    // read) must not leave them keeping the process alive.
    gateway.stop();
    throw err;
  }
  const tls = listen.tls ?? null;
  const grpc = await startGatewayGrpc(gateway, listen.host, listen.grpcPort, tls);
  const http = await startGatewayHttp(gateway, listen.host, listen.httpPort, tls);
  let metrics: { server: Server; port: number } | null = null;
  if (listen.metricsPort >= 0) {
    const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
      const url = (req.url ?? '').split('?')[0];
      if (url === '/metrics') {
        void gateway.metricsText().then(
          (text) => res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(text),
          (err: Error) => res.writeHead(500).end(err.message),
        );
      } else if (url === '/healthz' || url === '/v2/health/live') res.writeHead(200).end('ok\n');
      else if (url === '/readyz' || url === '/v2/health/ready')
        res.writeHead(gateway.fleet.anyReady() ? 200 : 503).end();
      else res.writeHead(404).end();
    };
    const server: Server = tls === null ? createServer(onRequest) : createHttpsServer(secureOptions(tls), onRequest);
    const port = await new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(listen.metricsPort, listen.host, () => resolve((server.address() as { port: number }).port));
    });
    metrics = { server, port };
  }
  const console =
    (listen.consolePort ?? -1) >= 0
      ? await startGatewayConsole(gateway, listen.host, listen.consolePort!, log, tls)
      : null;
  return {
    gateway,
    console,
    ports: { grpc: grpc.port, http: http.port, metrics: metrics?.port ?? -1, console: console?.port ?? -1 },
    stop: async () => {
      await Promise.all([grpc.close(), http.close(), console?.close()]);
      if (metrics) void closeServer(metrics.server);
      gateway.stop();
    },
  };
}
