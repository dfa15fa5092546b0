/**
 * Node compiles its own modules (http2, tls, worker_threads and the internal ones behind them: ~130
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
 * flag gave them before). The entry point (bundled-entry.ts) does that first. The pretenuring flag
 * must be set before the bundle is compiled (the bundle's cache is made under it), so the Node
 * modules the bundle imports are loaded before it, here.
 *
 * Imports only node:v8 (node:module, too, would bring its own Node modules into the entry point's
 * graph): scripts/bundle-engine.mjs copies the compiled file beside the bundle, and writes the
 * bundle's list of Node modules into the bundled start.
 */
import { setFlagsFromString } from 'node:v8';

/** Sets the semi-space flags back to their defaults; the heap keeps the sizes it was made with. */
export function setHeapFlagsToDefaults(): void {
  setFlagsFromString('--max-semi-space-size=0');
  setFlagsFromString('--min-semi-space-size=0');
}

/** Loads Node's modules `names` with `require` (call it while V8's flags are still Node's defaults). */
export function loadNodeModules(require: NodeJS.Require, names: readonly string[]): void {
  for (const name of names) {
    try {
      require(name);
    } catch {
      // Not in this Node: whatever in the bundle imports it fails as it would have.
    }
  }
  // fs loads its stream classes on the first read of fs.ReadStream, which the bundle's modules make
  // as they load (as does an ES import of node:fs, which reads every export).
  void (require('node:fs') as { ReadStream: unknown }).ReadStream;
}
