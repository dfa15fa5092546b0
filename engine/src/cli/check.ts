/**
 * `hloserve check PATH`: the same validation the server runs when it loads a bundle, offline, so
 * that a bundle can be checked before it is copied into a repository. PATH is one bundle (it has
 * a manifest.yaml) or a repository (its subdirectories are the bundles).
 */
import { stat } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { toServeError } from '@hloserve/common/errors';
import { loadBundle, MANIFEST_FILE, type Bundle } from '../bundle/bundle.js';
import { discoverBundles, type DiscoveredBundle } from '../bundle/discover.js';
import type { TensorSpec } from '../bundle/tensor-spec.js';
import { toWireDatatype } from '../dtypes.js';

function describeSpec(role: 'input' | 'output', spec: TensorSpec): string {
  return `  ${role.padEnd(6)} ${spec.name}  ${toWireDatatype(spec.dtype)} [${spec.wireShape().join(', ')}] (${spec.wireLetters})`;
}

/** The lines `check` prints for one loaded bundle. */
export function describeBundle(bundle: Bundle): string[] {
  const m = bundle.manifest;
  const facts: string[] = [bundle.kind];
  if (m.compiledBatchSizes.length) facts.push(`batch sizes ${m.compiledBatchSizes.join(' ')}`);
  if (bundle.weights)
    facts.push(`weights ${bundle.weights.tensors.length} tensors, ${bundle.weights.byteLength} bytes`);
  if (bundle.hooks) facts.push(`hooks ${basename(bundle.hooks.path)}`);
  const lines = [`${bundle.name}: ok (${facts.join(', ')})`];
  for (const spec of m.clientInputs ?? m.executableInputs) lines.push(describeSpec('input', spec));
  for (const spec of m.clientOutputs ?? m.executableOutputs) lines.push(describeSpec('output', spec));
  if (bundle.notServable) lines.push(`  note: ${bundle.notServable}`);
  for (const w of bundle.warnings) lines.push(`  warning: ${w}`);
  return lines;
}

/** Checks PATH; returns the report lines and whether every bundle is valid. */
export async function checkPath(path: string): Promise<{ lines: string[]; ok: boolean }> {
  const dir = resolve(path);
  const isBundle = await stat(join(dir, MANIFEST_FILE)).then(
    (s) => s.isFile(),
    () => false,
  );
  let found: DiscoveredBundle[];
  if (isBundle) {
    try {
      found = [{ name: basename(dir), dir, ok: true, bundle: await loadBundle(dir) }];
    } catch (err) {
      found = [{ name: basename(dir), dir, ok: false, error: toServeError(err) }];
    }
  } else {
    found = await discoverBundles(dir);
    if (found.length === 0) {
      return {
        lines: [`${path}: no ${MANIFEST_FILE} here or in any subdirectory: not a bundle or a repository`],
        ok: false,
      };
    }
  }
  const lines: string[] = [];
  for (const b of found) {
    if (b.ok) lines.push(...describeBundle(b.bundle));
    else lines.push(`${b.name}: error ${b.error.code}: ${b.error.message}`);
  }
  return { lines, ok: found.every((b) => b.ok) };
}
