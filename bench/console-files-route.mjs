// Serves a console build's files to a browser context through a route, in place of the engine's
// own (the API and the feed stay the engine's): two consoles compared against one engine.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

const TYPES = { js: 'text/javascript', css: 'text/css', html: 'text/html', svg: 'image/svg+xml', png: 'image/png' };

/**
 * Routes every non-API path under `url` to the files of `distOf()` (read at each request, so the
 * caller may switch builds between loads); a path without an extension is the app's index.html.
 * The pages then have no address space of their own: launch Chromium with the
 * LocalNetworkAccessChecks feature off, or it refuses them the engine's loopback socket.
 */
export async function routeConsoleFiles(context, url, distOf) {
  const notApi = new RegExp(`^${url.replace(/[.:/]/g, '\\$&')}/(?!api/)`);
  await context.route(notApi, async (route) => {
    const path = new URL(route.request().url()).pathname;
    const file = /\.[a-z0-9]+$/.test(path) ? path : '/index.html';
    try {
      const body = await readFile(join(distOf(), file));
      await route.fulfill({ body, contentType: TYPES[file.split('.').pop()] ?? 'application/octet-stream' });
    } catch {
      await route.fulfill({ status: 404, body: '' });
    }
  });
}
