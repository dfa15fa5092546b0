// Serves console/dist the way the engine must: files by path, and index.html for any other GET
// that is not under /api/ (the single-page app's routes such as /models/resnet). Used by the
// mocked-API specs, and by the console benches to put another console build in front of an
// engine: then /api/ (HTTP and the WebSocket upgrade) is passed through to the engine unchanged,
// Host header included, so its Origin check holds.
import { createReadStream, existsSync, statSync } from 'node:fs';
import { createServer, request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { extname, join, normalize, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
const distDir = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..', 'console', 'dist');
const types = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.webmanifest': 'application/manifest+json',
  '.json': 'application/json',
};
/**
 * @param {string} [apiTarget] the engine's console URL to pass /api/ through to
 * @param {string} [dir] another console build to serve (a bench comparing two builds), else console/dist
 * @returns {Promise<{ url: string, close: () => Promise<void> }>}
 */
async function serveConsole(apiTarget, dir = distDir) {
  const root = resolve(dir);
  if (!existsSync(join(root, 'index.html'))) throw new Error(`no console build in ${root}: run npm run build`);
  const server = createServer((req, res) => {
    const path = decodeURIComponent((req.url ?? '/').split('?')[0]);
    const file = normalize(join(root, path));
    if (file.startsWith(root) && existsSync(file) && statSync(file).isFile()) {
      const immutable = path.startsWith('/assets/');
      res.writeHead(200, {
        'content-type': types[extname(file)] ?? 'application/octet-stream',
        'cache-control': immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
      });
      createReadStream(file).pipe(res);
      return;
    }
    if (path.startsWith('/api/') && apiTarget) {
      const target = new URL(apiTarget);
      const upstream = httpRequest(
        { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
        (up) => {
          res.writeHead(up.statusCode ?? 502, up.headers);
          up.pipe(res);
        },
      );
      upstream.on('error', () => res.writeHead(502).end());
      req.pipe(upstream);
      return;
    }
    if (path.startsWith('/api/'))
      return void res
        .writeHead(404, { 'content-type': 'application/json' })
        .end('{"error":"no engine behind this server","code":"HLO_ERR_MODEL_NOT_FOUND"}');
    res.writeHead(200, { 'content-type': types['.html'], 'cache-control': 'no-cache' });
    createReadStream(join(root, 'index.html')).pipe(res);
  });
  if (apiTarget) {
    // The WebSocket: replay the upgrade request to the engine and splice the two sockets.
    server.on('upgrade', (req, socket, head) => {
      const target = new URL(apiTarget);
      const up = connect(Number(target.port), target.hostname, () => {
        const lines = [`${req.method} ${req.url} HTTP/1.1`];
        for (let i = 0; i < req.rawHeaders.length; i += 2) lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
        up.write(lines.join('\r\n') + '\r\n\r\n');
        if (head.length) up.write(head);
        socket.pipe(up).pipe(socket);
      });
      const end = () => (socket.destroy(), up.destroy());
      up.on('error', end);
      socket.on('error', end);
    });
  }
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => {
      server.closeAllConnections();
      return new Promise((r) => server.close(() => r()));
    },
  };
}
export { distDir, serveConsole };
