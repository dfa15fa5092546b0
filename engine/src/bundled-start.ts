/**
 * The bundled CLI's start, run by its entry point (bundled-entry.ts, engine/dist/bundle/cli.js).
 * scripts/bundle-engine.mjs copies this file's compiled output beside the bundle itself (cli.cjs);
 * run from anywhere else it finds no bundle. It compiles the bundle with a V8 code cache: a warm
 * start then neither parses the bundle's megabytes nor compiles, one by one, the functions a start
 * runs (the cache holds the ones compiled until the server was ready). Node 20 has no compile
 * cache for modules of its own (module.enableCompileCache is Node 22), hence a CommonJS bundle run
 * through vm.Script.
 *
 * The cache is written beside the bundle, once, after the first start that had none (or whose
 * cache was refused: by V8, made by another Node or under other V8 flags; or by bundle-code-cache.ts,
 * made from another bundle, cut short or damaged); a start that used it writes nothing. Where the
 * bundle's directory is not writable (the Docker image's tree belongs to root, its server runs as
 * another user) it goes to `$HLOSERVE_CACHE_DIR/code-cache/` (the image and the systemd unit set
 * that variable); with neither, a start runs without one. A rebuild of the bundle empties its
 * directory, and the cache's header names the bundle it was made from.
 */
import { isAscii } from 'node:buffer';
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { Script } from 'node:vm';
import { bundleIdentity, decodeCodeCache, encodeCodeCache } from './bundle-code-cache.js';
import { loadNodeModules } from './node-code-cache.js';

/** What cli.ts calls once `serve` is ready (listening, every model answering); the same key there. */
const READY_HOOK = Symbol.for('hloserve.bundled-start.ready');

const here = dirname(fileURLToPath(import.meta.url));
const bundle = join(here, 'cli.cjs');
const cacheName = `cli.cjs.${process.version}-${process.arch}.v8cache`;
// Where a cache is looked for and written, in this order. node.yaml's cache_dir is not known
// before the bundle runs, so only the environment's is.
const cacheDirs = [here];
const envCacheDir = process.env['HLOSERVE_CACHE_DIR'];
if (envCacheDir !== undefined && envCacheDir !== '') cacheDirs.push(join(envCacheDir, 'code-cache'));
// scripts/bundle-engine.mjs writes the bundle's SHA-256 and length here, so a start need not hash
// its 4.5 MB (~3 ms); unbuilt (this file run from dist/src), the bundle is hashed at start.
const BUILT_BUNDLE: { sha256: string; bytes: number } | null = null;

// scripts/bundle-engine.mjs writes here the Node modules the bundle imports (empty unbuilt).
const BUILT_NODE_MODULES: readonly string[] = [];

// Node's own modules first, while V8 would still take their code cache (node-code-cache.ts).
loadNodeModules(createRequire(import.meta.url), BUILT_NODE_MODULES);
// V8 refuses a code cache made under other flags; cli.ts sets this one before serving, after the
// bundle was compiled, so it is set here first (it only changes the GC's pretenuring).
setFlagsFromString('--no-allocation-site-pretenuring');

// The bundle keeps cli.ts's #! line; as a comment the line numbers (and the source map) still hold.
// scripts/bundle-engine.mjs writes it as ASCII, which decodes as Latin-1 in a third of the time
// UTF-8 takes (~10 ms of a start's JS thread for its 4.5 MB); a bundle that is not ASCII still
// decodes as UTF-8.
const bytes = readFileSync(bundle);
const source = (isAscii(bytes) ? bytes.toString('latin1') : bytes.toString('utf8')).replace(/^#!/, '//');
const identity = bundleIdentity(bytes, BUILT_BUNDLE);
let cached: Buffer | undefined;
for (const dir of cacheDirs) {
  try {
    const read = decodeCodeCache(readFileSync(join(dir, cacheName)), identity);
    if ('payload' in read) {
      cached = read.payload;
      break;
    }
  } catch {
    // None here.
  }
}
// CommonJS's own function wrapper (Module.wrap), so the bundle sees what a required file sees.
const wrapped = `(function (exports, require, module, __filename, __dirname) { ${source}\n});`;
const script = new Script(wrapped, {
  filename: bundle,
  cachedData: cached,
  // An import() left in the bundle resolves from here (the engine itself has none since a TypeScript
  // hook's compiler is required on a thread of its own, hooks/ts-transpile-thread.ts).
  importModuleDynamically: ((specifier: string) => import(specifier)) as never,
});
if (cached === undefined || script.cachedDataRejected === true) {
  (globalThis as Record<symbol, unknown>)[READY_HOOK] = () =>
    setImmediate(() => {
      const data = encodeCodeCache(script.createCachedData(), identity);
      for (const dir of cacheDirs) {
        const tmp = join(dir, `${cacheName}.${process.pid}.tmp`);
        try {
          if (dir !== here) mkdirSync(dir, { recursive: true, mode: 0o700 });
          writeFileSync(tmp, data);
          renameSync(tmp, join(dir, cacheName));
          return;
        } catch {
          // Not writable here: the next place, or none (the next start compiles the bundle again).
          try {
            rmSync(tmp, { force: true });
          } catch {
            // No such directory, or not a directory: nothing was written.
          }
        }
      }
    });
}
const module = { exports: {} };
(script.runInThisContext() as (...args: unknown[]) => void)(
  module.exports,
  createRequire(bundle),
  module,
  bundle,
  here,
);
