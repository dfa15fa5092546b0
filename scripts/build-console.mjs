// Builds the console (type check, then vite build into console/dist) when its sources changed since
// the last build, so `npm run build` stays fast when only the server changed.
// HLOSERVE_SKIP_CONSOLE=1 skips it; --force rebuilds regardless.
import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { newest } from './newest-mtime.mjs';
import { join } from 'node:path';

if (process.env.HLOSERVE_SKIP_CONSOLE === '1') process.exit(0);

const stamp = join('console', 'dist', 'index.html');
const inputs = [
  'console/src',
  'console/static',
  'console/index.html',
  'console/package.json',
  'console/tsconfig.json',
  'vite.config.ts',
];
const built = existsSync(stamp) ? statSync(stamp).mtimeMs : 0;
if (!process.argv.includes('--force') && built > 0 && inputs.every((p) => newest(p) < built)) {
  console.log('console: up to date (console/dist)');
  process.exit(0);
}

const run = (args) => {
  const r = spawnSync(process.execPath, args, { stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
};
run(['node_modules/typescript/bin/tsc', '-p', 'console/tsconfig.json', '--noEmit']);
run(['node_modules/vite/bin/vite.js', 'build', '--logLevel', 'warn']);
console.log('console: built into console/dist');
