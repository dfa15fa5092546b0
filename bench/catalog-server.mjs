// The catalog benches' server: `hloserve serve` of one checkout over a catalog repository in
// dynamic mode, the weight budget a tenth of the models, ready to answer, with a console token.
/* global fetch */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startServer } from '../e2e/dist/src/server-process.js';
import { SERVER_NODE_FLAGS } from '../engine/dist/src/node-flags.js';

/**
 * Starts the server of the checkout at `root` over `repo` (`models` bundles) with `cache` as its
 * cache directory; resolves once it answers ready, with an admin token of its console (made at the
 * first start, kept in the cache for the next ones).
 */
export async function startCatalogServer({ root, repo, models, cache, nodeFlags = SERVER_NODE_FLAGS }) {
  const s = await startServer(
    {
      HLOSERVE_MODEL_REPO: repo,
      HLOSERVE_CACHE_DIR: cache,
      HLOSERVE_MODEL_CONTROL_MODE: 'dynamic',
      HLOSERVE_RUNTIME_WEIGHT_CACHE_BYTES: String(Math.floor((models * 540_000) / 10)),
    },
    1_800_000,
    [],
    join(root, 'engine', 'dist', 'bundle', 'cli.js'),
    nodeFlags,
  );
  const http = `http://${s.httpUrl()}`;
  while ((await fetch(`${http}/v2/health/ready`).catch(() => null))?.status !== 200)
    await new Promise((r) => setTimeout(r, 100));
  const tokenFile = join(cache, 'bench-token');
  let token = existsSync(tokenFile) ? readFileSync(tokenFile, 'utf8') : null;
  if (token === null) {
    const setupToken = readFileSync(join(cache, 'console-setup-token'), 'utf8').trim();
    const r = await fetch(`http://127.0.0.1:${s.ports.console}/api/v1/setup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ setupToken, name: 'bench' }),
    });
    token = (await r.json()).data.token;
    writeFileSync(tokenFile, token);
  }
  return { s, http, token };
}
