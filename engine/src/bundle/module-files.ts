/**
 * Which StableHLO module files a bundle has and which it must have. Names follow the reference:
 * `model.mlir` (batch key 0: one module for any batch), `model.b{N}.mlir` per compiled batch size,
 * and `model.v{i}[.b{N}].mlir` per `input_shapes` variant. Every expected file must exist and
 * every file present must be expected: a stray `model.b3.mlir` usually means the manifest and the
 * export went out of step, and serving half of such a bundle would hide that.
 */
import { join } from 'node:path';
import { bundleError, fieldPath } from './bundle-error.js';
import type { Manifest } from './manifest.js';

/** Batch key of `model.mlir` / `model.v{i}.mlir`: the module takes any batch. */
export const ANY_BATCH = 0;

export interface ModuleFileName {
  readonly fileName: string;
  /** Index into `input_shapes`, or null for a bundle without variants. */
  readonly variant: number | null;
  /** The compiled batch size, or ANY_BATCH (0). */
  readonly batchSize: number;
}

const MODULE_NAME = /^model(?:\.v(0|[1-9]\d*))?(?:\.b([1-9]\d*))?\.mlir$/;

/**
 * Parses a module file name; null for files that are not modules at all, and 'malformed' for
 * names that look like one but do not parse (`model.b0.mlir`, `model.b01.mlir`, `model.x.mlir`).
 */
export function parseModuleFileName(fileName: string): ModuleFileName | 'malformed' | null {
  const m = MODULE_NAME.exec(fileName);
  if (m) {
    return {
      fileName,
      variant: m[1] === undefined ? null : Number(m[1]),
      batchSize: m[2] === undefined ? ANY_BATCH : Number(m[2]),
    };
  }
  return fileName.startsWith('model.') && fileName.endsWith('.mlir') ? 'malformed' : null;
}

function expectedName(variant: number | null, batchSize: number): string {
  return `model${variant === null ? '' : `.v${variant}`}${batchSize === ANY_BATCH ? '' : `.b${batchSize}`}.mlir`;
}

/**
 * Matches the module files among `fileNames` (a directory listing) against the manifest.
 * Returns them ordered by variant, then batch size.
 */
export function matchModuleFiles(dir: string, fileNames: readonly string[], manifest: Manifest): ModuleFileName[] {
  const mf = manifest.file;
  const found: ModuleFileName[] = [];
  for (const name of fileNames) {
    const parsed = parseModuleFileName(name);
    if (parsed === 'malformed') {
      throw bundleError(
        join(dir, name),
        null,
        'not a valid module file name; expected model.mlir, model.b{N}.mlir (N > 0, no leading zeros) or model.v{i}[.b{N}].mlir',
      );
    }
    if (parsed) found.push(parsed);
  }

  if (manifest.kind === 'meta') {
    const first = found[0];
    if (first) throw bundleError(join(dir, first.fileName), null, 'a meta bundle (kind: meta) has no StableHLO module');
    return [];
  }

  const sizes = manifest.compiledBatchSizes;
  const batchKeys = sizes.length > 0 ? sizes : [ANY_BATCH];
  const variants = manifest.inputShapes.length > 0 ? manifest.inputShapes.map((v) => v.index) : [null];
  const listed = `[${sizes.join(', ')}]`;

  for (const f of found) {
    const where = join(dir, f.fileName);
    if (f.variant === null && variants[0] !== null) {
      throw bundleError(
        where,
        null,
        `the manifest lists ${variants.length} input_shapes, so modules must be named model.v{i}[.b{N}].mlir`,
      );
    }
    if (f.variant !== null && variants[0] === null) {
      throw bundleError(
        where,
        null,
        'a variant module (model.v{i}...) needs input_shapes in the manifest, which has none',
      );
    }
    if (f.variant !== null && f.variant >= variants.length) {
      throw bundleError(
        where,
        null,
        `variant ${f.variant} does not exist; input_shapes has ${variants.length} entries (0..${variants.length - 1})`,
      );
    }
    if (f.batchSize === ANY_BATCH && sizes.length > 0) {
      throw bundleError(
        where,
        null,
        `an any-batch module cannot be combined with batching.compiled_batch_sizes ${listed}; remove it, or remove the list and the per-size files`,
      );
    }
    if (f.batchSize !== ANY_BATCH && !sizes.includes(f.batchSize)) {
      throw bundleError(
        where,
        null,
        sizes.length > 0
          ? `batch size ${f.batchSize} is not listed in ${mf} batching.compiled_batch_sizes ${listed}`
          : `batch size ${f.batchSize} needs batching.compiled_batch_sizes in ${mf}, which lists none`,
      );
    }
  }

  const have = new Set(found.map((f) => f.fileName));
  for (const variant of variants) {
    batchKeys.forEach((batchSize, i) => {
      const name = expectedName(variant, batchSize);
      if (have.has(name)) return;
      const field =
        batchSize === ANY_BATCH
          ? variant === null
            ? 'batching.compiled_batch_sizes'
            : fieldPath('input_shapes', variant)
          : fieldPath('batching.compiled_batch_sizes', i);
      const why =
        batchSize === ANY_BATCH
          ? variant === null
            ? `is empty, so the bundle needs ${name} (one module for any batch), which is missing`
            : `has no module file ${name}`
          : `${batchSize} has no module file ${name}${variant === null ? '' : ` (input_shapes[${variant}])`}`;
      throw bundleError(mf, field, why);
    });
  }
  return found.sort((a, b) => (a.variant ?? 0) - (b.variant ?? 0) || a.batchSize - b.batchSize);
}
