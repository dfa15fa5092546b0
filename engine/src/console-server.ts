import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { listen } from './listen.js';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Worker } from './worker/worker.js';

const consoleDir = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'console', 'public');

/**
 * The console's listener. Until the React console lands it serves a placeholder page and a
 * read-only JSON view of models, residency and queues.
 */
export function startConsoleServer(
  worker: Worker,
  host: string,
  port: number,
): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    const url = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && url === '/api/models') {
      const cache = worker.cache.stats();
      const body = worker.repositoryIndex(false).map((m) => ({
        ...m,
        residency: cache.models.find((c) => c.model === m.name) ?? null,
        scheduling: worker.scheduler.stats(m.name) ?? null,
      }));
      return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    }
    if (req.method === 'GET' && (url === '/' || url === '/index.html')) {
      readFile(join(consoleDir, 'index.html')).then(
        (html) => res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(html),
        () => res.writeHead(404).end(),
      );
      return;
    }
    res.writeHead(404).end();
  });
  return listen(server, host, port);
}
