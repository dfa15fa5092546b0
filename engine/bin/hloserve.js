#!/usr/bin/env -S node --max-semi-space-size=8
// The installed `hloserve` command. It starts node with the serving flags (engine/src/node-flags.ts)
// and runs the compiled CLI; committed as a file of its own so that the link npm makes at install
// time points at something that exists (and is executable) before the first build.
import { existsSync } from 'node:fs';

const cli = new URL('../dist/src/cli.js', import.meta.url);
if (!existsSync(cli)) {
  console.error("hloserve: the engine is not built yet: run 'npm run build' in the hloserve checkout");
  process.exit(1);
}
await import(cli.href);
