// Fetches a pinned PJRT plugin wheel from PyPI into the git-ignored cache and unpacks the files we
// load. Run at install time only: nothing is ever downloaded while serving.
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
export const repoRoot = resolve(here, '..', '..');
export const pins = JSON.parse(readFileSync(join(here, '..', 'plugins.json'), 'utf8'));

// Plugins are installed software with their own location, apart from the server's state
// (HLOSERVE_CACHE_DIR); native/lib/plugin.ts reads the same variable at run time.
export function pluginRoot() {
  return resolve(process.env.HLOSERVE_PLUGIN_DIR ?? join(repoRoot, '.cache', 'plugins'));
}

/** Downloaded wheels: the checkout's .cache/wheels, or .wheels inside a custom plugin dir. */
function wheelDir() {
  return process.env.HLOSERVE_PLUGIN_DIR ? join(pluginRoot(), '.wheels') : join(repoRoot, '.cache', 'wheels');
}

export function pluginDir(name) {
  const pin = pins[name];
  return join(pluginRoot(), `${pin.package}-${pin.version}`);
}

function sha256(file) {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

function download(pin, dest) {
  // pip is PyPI's own client and honours the machine's index configuration.
  const pip = spawnSync(
    process.env.PYTHON ?? 'python3',
    [
      '-m',
      'pip',
      'download',
      '--no-deps',
      '--only-binary=:all:',
      '--platform',
      'manylinux_2_27_x86_64',
      '--python-version',
      '3.11',
      '-d',
      dest,
      `${pin.package}==${pin.version}`,
    ],
    { stdio: ['ignore', 'inherit', 'inherit'] },
  );
  if (pip.status !== 0) throw new Error(`pip download of ${pin.package}==${pin.version} failed (exit ${pip.status})`);
}

function unzip(wheel, members, outDir) {
  const py = `import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1])\nfor m in sys.argv[3:]:\n    z.extract(m, sys.argv[2])`;
  const r = spawnSync(process.env.PYTHON ?? 'python3', ['-c', py, wheel, outDir, ...members], { stdio: 'inherit' });
  if (r.status !== 0) throw new Error(`could not unpack ${wheel}`);
}

/** Ensures plugin `name` is unpacked in the cache; returns the absolute path of its shared library. */
export function ensurePlugin(name, log = console.log) {
  const pin = pins[name];
  if (!pin) throw new Error(`unknown plugin pin '${name}'`);
  const dir = pluginDir(name);
  const lib = join(dir, pin.library);
  const stamp = join(dir, '.sha256');
  if (existsSync(lib) && existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === pin.sha256) return lib;
  mkdirSync(dir, { recursive: true });
  const wheels = wheelDir();
  mkdirSync(wheels, { recursive: true });
  const wheel = join(wheels, pin.wheel);
  if (!existsSync(wheel) || sha256(wheel) !== pin.sha256) {
    log(`hloserve: fetching ${pin.package}==${pin.version} from PyPI`);
    download(pin, wheels);
    if (!readdirSync(wheels).includes(pin.wheel)) throw new Error(`pip did not produce ${pin.wheel}`);
  }
  const got = sha256(wheel);
  if (got !== pin.sha256) {
    rmSync(wheel, { force: true });
    throw new Error(`sha256 mismatch for ${pin.wheel}: expected ${pin.sha256}, got ${got}`);
  }
  unzip(wheel, [pin.library, ...(pin.header ? [pin.header] : [])], dir);
  writeFileSync(stamp, pin.sha256 + '\n');
  log(`hloserve: ${pin.package} ${pin.version} ready at ${lib}`);
  return lib;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const names = process.argv.slice(2);
  for (const n of names.length ? names : ['cpu']) ensurePlugin(n);
}
