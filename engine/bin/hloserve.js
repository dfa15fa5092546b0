#!/usr/bin/env -S node --max-semi-space-size=8 --min-semi-space-size=8
// The installed `hloserve` command. It starts node with the serving flags (engine/src/node-flags.ts)
// and runs the CLI as `npm run build` bundled it (scripts/bundle-engine.mjs: one file to load
// instead of hundreds, so a start is quicker), else tsc's output; committed as a file of its own
// so that the link npm makes at install time points at something that exists (and is executable)
// before the first build.
import { existsSync } from 'node:fs';

const bundled = new URL('../dist/bundle/cli.js', import.meta.url);
const cli = existsSync(bundled) ? bundled : new URL('../dist/src/cli.js', import.meta.url);
if (!existsSync(cli)) {
  console.error("hloserve: the engine is not built yet: run 'npm run build' in the hloserve checkout");
  process.exit(1);
}
await import(cli.href);
