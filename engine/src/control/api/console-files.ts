/**
 * The console's built files (console/dist, made by `npm run build`) on the console port: hashed
 * assets cached for good, anything else that names no file answered with index.html so that the
 * console's own routes (/models/resnet) survive a reload. Paths under /api/ never fall back.
 */
import { readFile } from 'node:fs/promises';
import { dirname, extname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

export const CONSOLE_DIST = resolve(
  dirname(fileURLToPath(import.meta.url)),
  '..',
  '..',
  '..',
  '..',
  '..',
  'console',
  'dist',
);

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.webmanifest': 'application/manifest+json',
  '.woff2': 'font/woff2',
};
const SAFE_PATH = /^[A-Za-z0-9_.\-/]+$/;

export function consoleFiles(app: FastifyInstance, dist = CONSOLE_DIST): void {
  const handler = async (req: FastifyRequest, reply: FastifyReply) => {
    const path = req.url.split('?')[0] ?? '/';
    if (path.startsWith('/api/'))
      return reply.code(404).send({ error: `no route GET ${path.slice(0, 200)}`, code: 'HLO_ERR_NOT_FOUND' });
    const rel = path.replace(/^\/+/, '');
    if (rel !== '' && SAFE_PATH.test(rel) && !rel.split('/').includes('..')) {
      const file = join(dist, rel);
      const body = file.startsWith(dist + sep) ? await readFile(file).catch(() => null) : null;
      if (body !== null) {
        const immutable = rel.startsWith('assets/');
        return reply
          .type(TYPES[extname(rel)] ?? 'application/octet-stream')
          .header('cache-control', immutable ? 'public, max-age=31536000, immutable' : 'no-cache')
          .send(body);
      }
    }
    const html = await readFile(join(dist, 'index.html')).catch(() => null);
    if (html === null)
      return reply
        .code(404)
        .send({ error: 'the console is not built (npm run build makes console/dist)', code: 'HLO_ERR_NOT_FOUND' });
    return reply.type(TYPES['.html']!).header('cache-control', 'no-cache').send(html);
  };
  const options = { config: { scope: 'public' }, schema: { hide: true } } as const;
  app.get('/', options, handler);
  app.get('/*', options, handler);
}
