/**
 * The bundled CLI's entry point: scripts/bundle-engine.mjs copies this file's compiled output to
 * engine/dist/bundle/cli.js, beside the bundled start (bundled-start.ts), which it runs. It exists
 * to set V8's semi-space flags back to Node's defaults before any other of Node's modules loads
 * (node-code-cache.ts): every Node module that a module graph imports statically is compiled when
 * the graph is linked, before any of its code runs, so what the bundled start imports (crypto, vm,
 * ...) is loaded in a graph of its own, after this.
 */
import { setHeapFlagsToDefaults } from './node-code-cache.js';

setHeapFlagsToDefaults();
await import('./bundled-start.js');
