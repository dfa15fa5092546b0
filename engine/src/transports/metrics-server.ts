import { createServer, type RequestListener, type Server } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { listen } from '@hloserve/common/listen';
import { httpsOptions, type TlsMaterial } from '../tls/tls-material.js';
import type { Worker } from '../worker/worker.js';

/** Prometheus /metrics plus liveness and readiness probes, on their own port (Triton: 8002). */
export async function startMetricsServer(
  worker: Worker,
  host: string,
  port: number,
  tls: TlsMaterial | null = null,
): Promise<{ server: Server; port: number }> {
  const handler: RequestListener = (req, res) => {
    const url = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && url === '/metrics') {
      worker.refreshGauges();
      worker.metrics.text().then(
        (text) => res.writeHead(200, { 'content-type': worker.metrics.contentType }).end(text),
        (err: Error) => res.writeHead(500).end(err.message),
      );
      return;
    }
    if (req.method === 'GET' && (url === '/healthz' || url === '/v2/health/live'))
      return void res.writeHead(200).end('ok');
    if (req.method === 'GET' && (url === '/readyz' || url === '/v2/health/ready')) {
      const ready = worker.serverReady();
      return void res.writeHead(ready ? 200 : 503).end(ready ? 'ready' : 'not ready');
    }
    res.writeHead(404).end();
  };
  // An https.Server is a tls.Server, which node:http's typings do not name; it listens and closes alike.
  const server = tls ? (createTlsServer(httpsOptions(tls), handler) as unknown as Server) : createServer(handler);
  return { server, port: await listen(server, host, port) };
}
