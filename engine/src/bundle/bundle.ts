/**
 * Loading one bundle directory: the manifest, the module files it implies, the weights header
 * and the optional hooks and reference files, cross-checked so that everything the runtime and
 * the scheduler later assume about a bundle holds from the moment it is registered. Module
 * bytes and weight data are not kept: the runtime reads a module when it compiles it and the
 * weight cache reads the weights when it needs them, so a repository of many models costs
 * little memory until used.
 */
import { readdir } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import type { ProgramSignature } from '@hloserve/native/mlir-signature';
import { isMlirBytecode } from '@hloserve/native/mlir-signature';
import { bundleError } from './bundle-error.js';
import { checkBundleTree, openBundleFile } from './bundle-file.js';
import { readManifest, type Manifest } from './manifest.js';
import type { ParsedYamlStore } from './parsed-yaml-store.js';
import { matchModuleFiles, type ModuleFileName } from './module-files.js';
import { checkMainSignature } from './module-signature.js';
import { checkReferenceHeader, type BundleReference } from './reference-data.js';
import { readTextModuleSignature, TEXT_SLICE_BYTES } from './text-module-signature.js';
import { readArgumentOrder, readSafetensorsHeader, type SafetensorsEntry } from './safetensors.js';

export const MANIFEST_FILE = 'manifest.yaml';
export const WEIGHTS_FILE = 'weights.safetensors';
export const REFERENCE_FILE = 'reference.safetensors';
/** Hook files, in the order they are looked for; more than one is ambiguous and refused. */
export const HOOK_FILES = ['model.js', 'model.mjs', 'model.ts'] as const;
/** Julia hooks of reference bundles: recognised so the messages can say they are not run. */
export const JULIA_HOOK_FILE = 'model.jl';

export type ModuleFormat = 'bytecode' | 'text';

export interface BundleModule extends ModuleFileName {
  readonly path: string;
  readonly format: ModuleFormat;
  readonly byteLength: number;
  /** Parsed `@main` signature of a text module; null for bytecode. */
  readonly signature: ProgramSignature | null;
  /** 'load': checked against manifest and weights here; 'compile': left to the runtime. */
  readonly signatureCheckedAt: 'load' | 'compile';
}

export interface BundleWeights {
  readonly path: string;
  readonly fileSize: number;
  readonly argumentOrder: readonly string[];
  /** The tensors in argument order: the trailing arguments of `main`. */
  readonly tensors: readonly SafetensorsEntry[];
  /** Sum of the tensors' byte lengths: what a device copy of the weights takes. */
  readonly byteLength: number;
}

export interface BundleHooks {
  readonly path: string;
  readonly language: 'js' | 'ts';
}

export interface Bundle {
  /** The directory name: the model name clients use. */
  readonly name: string;
  readonly dir: string;
  readonly manifest: Manifest;
  readonly kind: Manifest['kind'];
  /** Ordered by variant, then batch size. Empty for meta bundles. */
  readonly modules: readonly BundleModule[];
  /** Null when the bundle has no weights file (the module takes only inputs). */
  readonly weights: BundleWeights | null;
  readonly hooks: BundleHooks | null;
  readonly reference: BundleReference | null;
  /** Why this bundle loads but cannot be served yet (kind: meta), or null. */
  readonly notServable: string | null;
  readonly warnings: readonly string[];
}

/** The module for a batch size (exact, or the any-batch module) and variant, if the bundle has one. */
export function findModule(bundle: Bundle, batchSize: number, variant: number | null = null): BundleModule | undefined {
  return bundle.modules.find((m) => m.variant === variant && (m.batchSize === batchSize || m.batchSize === 0));
}

/** `parsedYaml`: manifests' parses kept by an earlier start (a start's discovery passes it). */
export async function loadBundle(dir: string, parsedYaml?: ParsedYamlStore): Promise<Bundle> {
  const root = resolve(dir);
  const name = basename(root);
  let fileNames: string[];
  try {
    fileNames = (await readdir(root)).sort();
  } catch (err) {
    throw bundleError(dir, null, `cannot read bundle directory: ${(err as Error).message}`, err);
  }
  // Messages name files as the caller spelled the directory (relative paths stay relative).
  const at = (file: string): string => join(dir, file);
  const has = (file: string): boolean => fileNames.includes(file);

  const manifest = await readManifest(at(MANIFEST_FILE), parsedYaml);
  const warnings = [...manifest.warnings];
  if (manifest.name !== null && manifest.name !== name) {
    warnings.push(
      `${manifest.file}: name: "${manifest.name}" differs from the directory name; the model is served as "${name}"`,
    );
  }

  const hookFiles = HOOK_FILES.filter(has);
  if (hookFiles.length > 1) {
    throw bundleError(dir, null, `more than one hooks file (${hookFiles.join(', ')}); keep one`);
  }
  const hooks: BundleHooks | null = hookFiles[0]
    ? { path: at(hookFiles[0]), language: hookFiles[0].endsWith('.ts') ? 'ts' : 'js' }
    : null;
  if (hooks) await checkBundleTree(dir);
  const juliaNote = has(JULIA_HOOK_FILE) ? `; ${JULIA_HOOK_FILE} (Julia) hooks are not run by hloserve` : '';
  if (!hooks) {
    for (const key of ['client_inputs', 'client_outputs'] as const) {
      const specs = key === 'client_inputs' ? manifest.clientInputs : manifest.clientOutputs;
      if (specs !== null && manifest.kind === 'model') {
        throw bundleError(
          manifest.file,
          key,
          `only allowed when the bundle has hooks (${HOOK_FILES.join(', ')}) to convert between client and executable tensors${juliaNote}`,
        );
      }
    }
    if (juliaNote) warnings.push(`${at(JULIA_HOOK_FILE)}: ignored${juliaNote}`);
  }

  if (manifest.kind === 'meta') {
    return loadMeta(name, root, dir, manifest, fileNames, hooks, juliaNote, warnings);
  }

  const weights = has(WEIGHTS_FILE) ? await loadWeights(at(WEIGHTS_FILE), warnings) : null;
  const modules: BundleModule[] = [];
  for (const file of matchModuleFiles(dir, fileNames, manifest)) {
    const variant = file.variant === null ? null : manifest.inputShapes[file.variant]!;
    modules.push(await loadModule(at(file.fileName), file, manifest, weights, variant));
  }
  const reference = has(REFERENCE_FILE)
    ? checkReferenceHeader(await readSafetensorsHeader(at(REFERENCE_FILE)), manifest)
    : null;

  // The files of each variant are checked above, but the server compiles one module per batch
  // size: a load would build from an arbitrary variant and fail its warmup, so say why up front.
  const notServable =
    manifest.inputShapes.length > 0
      ? 'input_shapes (variable input axes) is checked but not served: the server compiles one module per batch size'
      : null;
  return { name, dir: root, manifest, kind: 'model', modules, weights, hooks, reference, notServable, warnings };
}

function loadMeta(
  name: string,
  root: string,
  dir: string,
  manifest: Manifest,
  fileNames: readonly string[],
  hooks: BundleHooks | null,
  juliaNote: string,
  warnings: string[],
): Bundle {
  if (!hooks) {
    throw bundleError(
      dir,
      null,
      `kind: meta needs a hooks file (${HOOK_FILES.join(', ')}) with the run function that calls other models${juliaNote}`,
    );
  }
  const self = manifest.metaCalls.indexOf(name);
  if (self >= 0)
    throw bundleError(
      manifest.file,
      `meta.calls[${self}]`,
      `"${name}" is this bundle; a meta model cannot call itself`,
    );
  matchModuleFiles(dir, fileNames, manifest); // refuses module files in a meta bundle
  return {
    name,
    dir: root,
    manifest,
    kind: 'meta',
    modules: [],
    weights: null,
    hooks,
    reference: null,
    notServable: null,
    warnings,
  };
}

async function loadWeights(path: string, warnings: string[]): Promise<BundleWeights> {
  const header = await readSafetensorsHeader(path);
  const argumentOrder = readArgumentOrder(header);
  const unlisted = header.entries.filter((e) => !argumentOrder.includes(e.name)).map((e) => e.name);
  if (unlisted.length > 0) {
    warnings.push(
      `${path}: __metadata__.argument_order: tensors ${unlisted.map((n) => `"${n}"`).join(', ')} are not listed and will not be passed to main`,
    );
  }
  const tensors = argumentOrder.map((n) => header.entry(n)!);
  return {
    path,
    fileSize: header.fileSize,
    argumentOrder,
    tensors,
    byteLength: tensors.reduce((sum, t) => sum + t.byteLength, 0),
  };
}

async function loadModule(
  path: string,
  file: ModuleFileName,
  manifest: Manifest,
  weights: BundleWeights | null,
  variant: Manifest['inputShapes'][number] | null,
): Promise<BundleModule> {
  const magic = new Uint8Array(4);
  const handle = await openBundleFile(path);
  let size: number;
  let signature: ProgramSignature;
  try {
    size = (await handle.stat()).size;
    await handle.read(magic, 0, 4, 0);
    if (isMlirBytecode(magic)) {
      return { ...file, path, format: 'bytecode', byteLength: size, signature: null, signatureCheckedAt: 'compile' };
    }
    // A slice no larger than the file: a repository of many small modules then does not allocate
    // (and collect) a whole slice for each of them.
    signature = await readTextModuleSignature(handle, path, Math.min(TEXT_SLICE_BYTES, Math.max(size, 1)));
  } finally {
    await handle.close();
  }
  checkMainSignature(signature, {
    file: path,
    manifest,
    weights: weights?.tensors ?? [],
    weightsFile: weights?.path ?? null,
    batchSize: file.batchSize,
    variant,
  });
  return { ...file, path, format: 'text', byteLength: size, signature, signatureCheckedAt: 'load' };
}
