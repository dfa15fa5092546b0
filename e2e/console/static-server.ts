/**
 * Serves console/dist the way the engine must: files by path, and index.html for any other GET
 * that is not under /api/ (the single-page app's routes such as /models/resnet). Used by the
 * mocked-API specs; the real-engine specs use the engine's own console port.
 */
import { createReadStream, existsSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { extname, join, normalize, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const distDir = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..', 'console', 'dist');

const types: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.webmanifest': 'application/manifest+json',
  '.json': 'application/json',
};

export async function serveConsole(): Promise<{ url: string; close: () => Promise<void> }> {
  if (!existsSync(join(distDir, 'index.html'))) throw new Error(`no console build in ${distDir}: run npm run build`);
  const server: Server = createServer((req, res) => {
    const path = decodeURIComponent((req.url ?? '/').split('?')[0]!);
    const file = normalize(join(distDir, path));
    if (file.startsWith(distDir) && existsSync(file) && statSync(file).isFile()) {
      const immutable = path.startsWith('/assets/');
      res.writeHead(200, {
        'content-type': types[extname(file)] ?? 'application/octet-stream',
        'cache-control': immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
      });
      createReadStream(file).pipe(res);
      return;
    }
    if (path.startsWith('/api/'))
      return void res
        .writeHead(404, { 'content-type': 'application/json' })
        .end('{"error":"no engine behind this server","code":"HLO_ERR_MODEL_NOT_FOUND"}');
    res.writeHead(200, { 'content-type': types['.html'], 'cache-control': 'no-cache' });
    createReadStream(join(distDir, 'index.html')).pipe(res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((r) => server.close(() => r())) };
}
