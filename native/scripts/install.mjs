// npm install hook for @hloserve/native: fetch the pinned CPU plugin, then build the addon against
// the local Node headers (never downloading them).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensurePlugin, pins } from './fetch-plugin.mjs';

const pkgDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');

ensurePlugin('cpu');
// The OpenXLA build ships the only registry copy of pjrt_c_api.h we can check our ABI against.
if (process.env.HLOSERVE_SKIP_ABI_HEADER !== '1') {
  try {
    ensurePlugin('cpu-openxla');
  } catch (err) {
    if (!pins['cpu-openxla'].optional) throw err;
    console.warn(`hloserve: optional ABI reference not fetched: ${err.message}`);
  }
}

const env = { ...process.env };
if (!env.npm_config_nodedir && existsSync('/usr/include/node/node_api.h')) env.npm_config_nodedir = '/usr';
const gyp = env.npm_config_node_gyp ?? 'node-gyp';
const args = gyp.endsWith('.js') ? [process.execPath, gyp] : [gyp];
const r = spawnSync(args[0], [...args.slice(1), 'rebuild', '--jobs', 'max'], { cwd: pkgDir, env, stdio: 'inherit' });
if (r.status !== 0) process.exit(r.status ?? 1);
if (!existsSync(join(pkgDir, 'build', 'Release', 'hloserve_pjrt.node'))) {
  console.error('hloserve: addon build produced no hloserve_pjrt.node');
  process.exit(1);
}
