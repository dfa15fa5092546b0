/**
 * Node compiles its own modules (http2, tls, worker_threads and the ~150 internal ones behind them
 * in a server's start) from a code cache built into its binary, and V8 takes that cache only under
 * the flags it was made with, Node's defaults. The serving flags (node-flags.ts's semi-space sizes
 * on the command line, --no-allocation-site-pretenuring set by the bundle's entry point) made V8
 * refuse it, so a warm start's JS thread compiled every one of those modules from source
 * (bench/RESULTS.md, session 21).
 *
 * The semi-space flags size a heap when its isolate is made. Set back to their defaults (0) later,
 * they leave this isolate's young generation as the command line made it and change only what V8
 * checks a cache against, and the isolates made after it: worker threads, which then take their
 * young generation from their own resourceLimits (the hook and parser threads set it, to what the
 * flag gave them before). The pretenuring flag must be set before the bundle is compiled (the
 * bundle's cache is made under it), so the Node modules the bundle imports are loaded first, here.
 *
 * Imports only Node's own modules: scripts/bundle-engine.mjs copies the compiled file beside the
 * bundle, and writes the bundle's list of Node modules into the entry point.
 */
import { createRequire } from 'node:module';
import { setFlagsFromString } from 'node:v8';

/** Loads Node's modules `names` while V8's flags are Node's defaults as far as its cache can tell. */
export function loadNodeModules(names: readonly string[]): void {
  setFlagsFromString('--max-semi-space-size=0');
  setFlagsFromString('--min-semi-space-size=0');
  const require = createRequire(import.meta.url);
  for (const name of names) {
    try {
      require(name);
    } catch {
      // Not in this Node: whatever in the bundle imports it fails as it would have.
    }
  }
}
