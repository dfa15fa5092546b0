/**
 * Finding the bundles of a model repository: every immediate subdirectory with a manifest.yaml.
 * Each is loaded on its own and its failure recorded beside the others, because one broken
 * upload must not keep the rest of the repository from serving.
 */
import { readdirSync } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { ServeError, toServeError } from '@hloserve/common/errors';
import { HOOK_FILES, loadBundle, MANIFEST_FILE, type Bundle } from './bundle.js';
import type { ParsedYamlStore } from './parsed-yaml-store.js';

export type DiscoveredBundle =
  | { readonly name: string; readonly dir: string; readonly ok: true; readonly bundle: Bundle }
  | { readonly name: string; readonly dir: string; readonly ok: false; readonly error: ServeError };

export interface DiscoverOptions {
  /** Only these model names (`models_include`); empty or absent means all. */
  readonly include?: readonly string[];
  /** Manifests' parses kept by an earlier start; awaited before the first manifest is parsed. */
  readonly parsedYaml?: Promise<ParsedYamlStore | undefined>;
}

/** Sorted by name. Throws only when the repository itself cannot be read. */
export async function discoverBundles(repoDir: string, options: DiscoverOptions = {}): Promise<DiscoveredBundle[]> {
  let names: string[];
  try {
    names = await readdir(repoDir);
  } catch (err) {
    throw new ServeError('HLO_ERR_CONFIG_INVALID', `model_repo ${repoDir}: cannot read: ${(err as Error).message}`, {
      cause: err,
    });
  }
  const include = options.include?.length ? new Set(options.include) : null;
  // Every bundle is looked at side by side: each takes a dozen file system calls one after another,
  // and a start waits for the whole repository before its models load.
  const found = await Promise.all(
    names
      // Dot-directories are editor/VCS/upload scratch space, never models.
      .filter((name) => !name.startsWith('.') && (!include || include.has(name)))
      .map((name) => discoverOne(repoDir, name, options.parsedYaml)),
  );
  return found.filter((d): d is DiscoveredBundle => d !== null).sort((a, b) => (a.name < b.name ? -1 : 1));
}

/** One subdirectory: null when it is not a directory or has no manifest. */
async function discoverOne(
  repoDir: string,
  name: string,
  parsedYaml?: Promise<ParsedYamlStore | undefined>,
): Promise<DiscoveredBundle | null> {
  const dir = join(repoDir, name);
  // stat, not the dirent type: bundles may be symlinks to directories elsewhere.
  const isDir = await stat(dir).then(
    (s) => s.isDirectory(),
    () => false,
  );
  if (!isDir) return null;
  const hasManifest = await stat(join(dir, MANIFEST_FILE)).then(
    (s) => s.isFile(),
    () => false,
  );
  if (!hasManifest) return null;
  try {
    return { name, dir, ok: true, bundle: await loadBundle(dir, await parsedYaml) };
  } catch (err) {
    const error = err instanceof ServeError ? err : wrap(dir, err);
    return { name, dir, ok: false, error };
  }
}

function wrap(dir: string, err: unknown): ServeError {
  const e = toServeError(err);
  return new ServeError('HLO_ERR_BUNDLE_INVALID', `${dir}: ${e.message}`, { cause: err });
}

/**
 * Whether a bundle of the repository (`include` applies as in discoverBundles) has a hooks file:
 * a quick look (one directory listing per entry) for a start to begin a hook thread before the
 * bundles are read. Anything unreadable counts as no hooks; discoverBundles reports it.
 */
export function repositoryHasHooks(repoDir: string, include: readonly string[] = []): boolean {
  const only = include.length ? new Set(include) : null;
  try {
    return readdirSync(repoDir).some((name) => {
      if (name.startsWith('.') || (only && !only.has(name))) return false;
      try {
        const files = readdirSync(join(repoDir, name));
        return HOOK_FILES.some((f) => files.includes(f));
      } catch {
        return false;
      }
    });
  } catch {
    return false;
  }
}
