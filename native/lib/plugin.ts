import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PluginLoadError } from './errors.js';

interface PluginPin {
  package: string;
  version: string;
  library: string;
  pjrtApi: string;
}

const packageRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const repoRoot = resolve(packageRoot, '..');

function pins(): Record<string, PluginPin> {
  return JSON.parse(readFileSync(join(packageRoot, 'plugins.json'), 'utf8')) as Record<string, PluginPin>;
}

/**
 * The default state directory (node.yaml `cache_dir`): $HLOSERVE_CACHE_DIR, else <install>/.cache.
 * Set but empty counts as unset, as in the config's overrides: resolve('') would be the working
 * directory, and the server would write its state wherever it was started.
 */
export function cacheDir(): string {
  return resolve(process.env.HLOSERVE_CACHE_DIR || join(repoRoot, '.cache'));
}

/**
 * Where `npm install` unpacks the pinned plugins: installed software, not state, so it has its own
 * setting ($HLOSERVE_PLUGIN_DIR, else <install>/.cache/plugins) that the installer and the server
 * both read. Moving the state (cache_dir) never loses the plugin.
 */
export function pluginDir(): string {
  return resolve(process.env.HLOSERVE_PLUGIN_DIR || join(repoRoot, '.cache', 'plugins'));
}

/** The directory of one pinned plugin package (native/plugins.json) under pluginDir(). */
export function pinnedPluginDir(name = 'cpu'): string {
  const pin = pins()[name];
  if (!pin) throw new PluginLoadError(`no plugin pin named '${name}' in native/plugins.json`);
  return join(pluginDir(), `${pin.package}-${pin.version}`);
}

/** Where the pinned CPU plugin is unpacked by `npm install`. */
export function cpuPluginPath(name = 'cpu'): string {
  return join(pinnedPluginDir(name), pins()[name]!.library);
}

function findCudaPlugin(): string {
  if (process.env.HLOSERVE_CUDA_PLUGIN) return process.env.HLOSERVE_CUDA_PLUGIN;
  const python = process.env.PYTHON ?? 'python3';
  try {
    const dir = execFileSync(python, ['-c', 'import jax_plugins.xla_cuda13 as m; print(m.__path__[0])'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    return join(dir, 'xla_cuda_plugin.so');
  } catch (err) {
    throw new PluginLoadError(
      "runtime.plugin 'cuda' needs an installed jax-cuda13-pjrt (pip install 'jax-cuda13-pjrt==0.11.2') " +
        'or HLOSERVE_CUDA_PLUGIN=<path to xla_cuda_plugin.so>',
      { cause: err },
    );
  }
}

/**
 * Resolves `runtime.plugin` ('cpu', 'cuda' or a path to any PJRT plugin) to an existing file.
 * Nothing is downloaded here: a missing CPU plugin means the install step did not run.
 */
export function resolvePlugin(plugin: string): string {
  let path: string;
  if (plugin === 'cpu' || plugin === 'cpu-openxla') path = cpuPluginPath(plugin);
  else if (plugin === 'cuda') path = findCudaPlugin();
  else path = resolve(plugin);
  if (!existsSync(path)) {
    const hint =
      plugin === 'cpu' || plugin === 'cpu-openxla'
        ? `run 'npm install' (or 'node native/scripts/fetch-plugin.mjs ${plugin}') to fetch the pinned plugin`
        : 'check runtime.plugin';
    throw new PluginLoadError(`PJRT plugin not found at ${path}: ${hint}`);
  }
  return path;
}
