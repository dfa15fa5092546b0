/**
 * manifest.yaml, format 2.0: the reference's schema (reactantserver.md §3), validated field by
 * field so that a bad bundle is refused at load with the file and field named, never at the
 * first request. Checks that need the rest of the bundle directory (hooks present, module files,
 * the directory name) belong to the loader in bundle.ts.
 */
import { describeValue, isMapping } from '../config/describe-value.js';
import { parseYamlText } from '../config/yaml-text.js';
import type { TensorRole } from '../dtypes.js';
import { ServeError } from '@hloserve/common/errors';
import { bundleError, fieldPath } from './bundle-error.js';
import { readBundleFile } from './bundle-file.js';
import type { ParsedYamlStore } from './parsed-yaml-store.js';
import { parseTensorSpec, VARIABLE_DIM, type ExecutableTensorSpec, type TensorSpec } from './tensor-spec.js';

export type ManifestKind = 'model' | 'meta';

/** One variable (-1) axis of an executable input; the order of these is the variant key order. */
export interface VariableAxis {
  readonly input: string;
  readonly inputIndex: number;
  readonly letter: string;
  /** Index of the letter in the input's manifest-order `letters`. */
  readonly manifestAxis: number;
}

/** One entry of `input_shapes`: the extents a compiled variant binds to the variable letters. */
export interface InputShapeVariant {
  readonly index: number;
  readonly extents: Readonly<Record<string, number>>;
  /** Extents in `Manifest.variableAxes` order; equal keys mean the same variant. */
  readonly key: readonly number[];
}

export interface Manifest {
  /** The path it was read from, for messages. */
  readonly file: string;
  /** Normalised: always "2.0". */
  readonly formatVersion: '2.0';
  /** As written; informational only, the bundle directory name is the model name. */
  readonly name: string | null;
  readonly description: string | null;
  readonly kind: ManifestKind;
  /** `meta.calls` for kind meta (possibly empty); empty for models. */
  readonly metaCalls: readonly string[];
  readonly executableInputs: readonly ExecutableTensorSpec[];
  readonly executableOutputs: readonly ExecutableTensorSpec[];
  /** Null when absent: clients then see the executable tensors. */
  readonly clientInputs: readonly TensorSpec[] | null;
  readonly clientOutputs: readonly TensorSpec[] | null;
  /** Ascending, unique. Empty: one module (`model.mlir`), served at the batch its `main` declares. */
  readonly compiledBatchSizes: readonly number[];
  /** True when the executable inputs carry a batch axis (then all of them do). */
  readonly batched: boolean;
  readonly variableAxes: readonly VariableAxis[];
  /** Empty unless some executable input has a variable axis. */
  readonly inputShapes: readonly InputShapeVariant[];
  readonly provenance: Readonly<Record<string, unknown>>;
  /** Things that did not stop the load but someone should see (unknown keys). */
  readonly warnings: readonly string[];
}

const TOP_LEVEL_KEYS = [
  'format_version',
  'name',
  'description',
  'kind',
  'meta',
  'executable_inputs',
  'executable_outputs',
  'client_inputs',
  'client_outputs',
  'batching',
  'input_shapes',
  'provenance',
];
// Written by some reference exporters; derived from the shape letters, so ignored without a warning.
const BATCHING_KEYS = ['compiled_batch_sizes', 'batch_dim'];

/** The tensors clients send: client_inputs when a hook declares them, else the executable inputs. */
export function clientInputSpecs(m: Manifest): readonly TensorSpec[] {
  return m.clientInputs ?? m.executableInputs;
}

export function clientOutputSpecs(m: Manifest): readonly TensorSpec[] {
  return m.clientOutputs ?? m.executableOutputs;
}

/** `parsedYaml`: the text's parse as kept by an earlier start, if there is one (parsed-yaml-store.ts). */
export async function readManifest(path: string, parsedYaml?: ParsedYamlStore): Promise<Manifest> {
  let text: string;
  try {
    text = await readBundleFile(path, 'utf8');
  } catch (err) {
    if (err instanceof ServeError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    throw bundleError(
      path,
      null,
      code === 'ENOENT' ? 'missing (every bundle needs a manifest.yaml)' : String(err),
      err,
    );
  }
  const key = `${path}\0${text}`;
  const known = parsedManifests.get(key);
  if (known !== undefined) {
    // Most recently used last, so the oldest entry is the first to go.
    parsedManifests.delete(key);
    parsedManifests.set(key, known);
    return known;
  }
  const manifest = parseManifest(text, path, parsedYaml);
  parsedManifests.set(key, manifest);
  if (parsedManifests.size > PARSED_MANIFESTS_KEPT) parsedManifests.delete(parsedManifests.keys().next().value!);
  return manifest;
}

/**
 * Manifests already parsed, by file and exact text (a Manifest is immutable, so one can be
 * shared). The YAML parser runs rarely enough in a serving process to stay unoptimised: a 1 KB
 * manifest took 1.4-3 ms of the JS thread, a stall for every model serving, on every reload
 * (bench/RESULTS.md). A reload that changes weights or modules leaves the manifest's text as it
 * was. Failures are not kept: a broken manifest is parsed again, and reports again, each time.
 */
const parsedManifests = new Map<string, Manifest>();
const PARSED_MANIFESTS_KEPT = 256;

/** Parses and validates manifest text; `file` is only used to name the file in messages. */
export function parseManifest(text: string, file: string, parsedYaml?: ParsedYamlStore): Manifest {
  let raw = parsedYaml?.lookup(text);
  if (raw === undefined) {
    const yaml = parseYamlText(text);
    if (!yaml.ok) throw bundleError(file, null, yaml.message);
    raw = yaml.value;
    parsedYaml?.remember(text, raw);
  }
  if (!isMapping(raw))
    throw bundleError(file, null, `expected a YAML mapping at the top level, got ${describeValue(raw)}`);

  const warnings: string[] = [];
  const warn = (message: string): void => void warnings.push(message);
  for (const key of Object.keys(raw)) {
    if (!TOP_LEVEL_KEYS.includes(key)) warn(`${file}: ${fieldPath('', key)}: unknown key, ignored`);
  }

  parseFormatVersion(raw.format_version, file);
  const name = optionalString(raw, 'name', file);
  const description = optionalString(raw, 'description', file);

  const kindRaw = raw.kind ?? 'model';
  if (kindRaw !== 'model' && kindRaw !== 'meta') {
    throw bundleError(file, 'kind', `expected "model" or "meta", got ${describeValue(kindRaw)}`);
  }
  const kind: ManifestKind = kindRaw;
  const metaCalls = parseMeta(raw, kind, file, warn);

  const section = (key: string, role: TensorRole, required: boolean): TensorSpec[] | null => {
    const value = raw[key];
    if (value === undefined || value === null) {
      if (required) throw bundleError(file, key, `missing; a ${kind} manifest must list its ${key.replace('_', ' ')}`);
      return null;
    }
    if (!Array.isArray(value)) throw bundleError(file, key, `expected a list of tensors, got ${describeValue(value)}`);
    const specs = value.map((entry, i) => parseTensorSpec(entry, { file, path: fieldPath(key, i), role, warn }));
    checkUniqueNames(specs, key, file);
    return specs;
  };
  const isModel = kind === 'model';
  // BYTES is refused on executable tensors by parseDTypeToken, so these are DType specs.
  const executableInputs = (section('executable_inputs', 'executable', isModel) ?? []) as ExecutableTensorSpec[];
  const executableOutputs = (section('executable_outputs', 'executable', isModel) ?? []) as ExecutableTensorSpec[];
  const clientInputs = section('client_inputs', 'client', false);
  const clientOutputs = section('client_outputs', 'client', false);
  if (isModel && executableOutputs.length === 0) {
    throw bundleError(file, 'executable_outputs', 'empty; a model must return at least one tensor');
  }
  if (!isModel) {
    if (!clientInputs?.length) {
      throw bundleError(file, 'client_inputs', 'missing or empty; a meta model is called through its client_inputs');
    }
    if (!clientOutputs?.length) {
      throw bundleError(file, 'client_outputs', 'missing or empty; a meta model answers with its client_outputs');
    }
  }

  const batched = checkBatchAxes(executableInputs, file);
  const compiledBatchSizes = parseBatching(raw.batching, file, warn);
  if (isModel && !batched && compiledBatchSizes.some((n) => n !== 1)) {
    throw bundleError(
      file,
      'batching.compiled_batch_sizes',
      `[${compiledBatchSizes.join(', ')}] needs a batch axis, but no executable input has one (letter n or b)`,
    );
  }

  const variableAxes = collectVariableAxes(executableInputs);
  const inputShapes = parseInputShapes(raw.input_shapes, kind, variableAxes, file);

  const provenance = raw.provenance ?? {};
  if (!isMapping(provenance))
    warn(`${file}: provenance: expected a mapping, got ${describeValue(provenance)}; ignored`);

  return {
    file,
    formatVersion: '2.0',
    name,
    description,
    kind,
    metaCalls,
    executableInputs,
    executableOutputs,
    clientInputs,
    clientOutputs,
    compiledBatchSizes,
    batched,
    variableAxes,
    inputShapes,
    provenance: isMapping(provenance) ? provenance : {},
    warnings,
  };
}

function parseFormatVersion(value: unknown, file: string): void {
  // YAML reads an unquoted 2.0 as the number 2, so the number is the same version.
  if (value === '2.0' || value === '2' || value === 2) return;
  if (value === undefined) throw bundleError(file, 'format_version', 'missing; expected "2.0"');
  throw bundleError(file, 'format_version', `unsupported version ${describeValue(value)}; hloserve reads "2.0"`);
}

function optionalString(raw: Record<string, unknown>, key: string, file: string): string | null {
  const value = raw[key];
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') throw bundleError(file, key, `expected a string, got ${describeValue(value)}`);
  return value;
}

function parseMeta(
  raw: Record<string, unknown>,
  kind: ManifestKind,
  file: string,
  warn: (message: string) => void,
): string[] {
  const meta = raw.meta;
  if (kind === 'model') {
    if (meta !== undefined && meta !== null) throw bundleError(file, 'meta', 'only allowed with kind: meta');
    return [];
  }
  if (!isMapping(meta)) {
    throw bundleError(
      file,
      'meta',
      `missing; kind: meta needs meta: {calls: [model, ...]}, got ${describeValue(meta)}`,
    );
  }
  for (const key of Object.keys(meta)) {
    if (key !== 'calls') warn(`${file}: ${fieldPath('meta', key)}: unknown key, ignored`);
  }
  const calls = meta.calls;
  if (!Array.isArray(calls)) {
    throw bundleError(file, 'meta.calls', `expected a list of model names (may be empty), got ${describeValue(calls)}`);
  }
  const seen = new Map<string, number>();
  calls.forEach((c: unknown, i) => {
    const path = fieldPath('meta.calls', i);
    if (typeof c !== 'string' || c === '')
      throw bundleError(file, path, `expected a model name, got ${describeValue(c)}`);
    const first = seen.get(c);
    if (first !== undefined) throw bundleError(file, path, `"${c}" is listed twice (also meta.calls[${first}])`);
    seen.set(c, i);
  });
  return calls as string[];
}

function checkUniqueNames(specs: readonly TensorSpec[], section: string, file: string): void {
  const seen = new Map<string, number>();
  specs.forEach((s, i) => {
    const first = seen.get(s.name);
    if (first !== undefined) {
      throw bundleError(
        file,
        fieldPath(fieldPath(section, i), 'name'),
        `duplicate tensor name "${s.name}" (also ${section}[${first}])`,
      );
    }
    seen.set(s.name, i);
  });
}

/**
 * All or nothing: a batch is built by concatenating requests along the batch axis, so an
 * unbatched input next to batched ones would have to be taken from one request and silently
 * applied to the others.
 */
function checkBatchAxes(inputs: readonly ExecutableTensorSpec[], file: string): boolean {
  const batchedIndex = inputs.findIndex((s) => s.batchAxisManifest !== null);
  if (batchedIndex < 0) return false;
  inputs.forEach((s, i) => {
    if (s.batchAxisManifest === null) {
      throw bundleError(
        file,
        fieldPath(fieldPath('executable_inputs', i), 'shape'),
        `${JSON.stringify(s.letters)} has no batch axis but executable_inputs[${batchedIndex}] ("${inputs[batchedIndex]!.name}") ` +
          'does; every executable input must carry a batch letter (n or b), or none may',
      );
    }
  });
  return true;
}

function parseBatching(value: unknown, file: string, warn: (message: string) => void): number[] {
  if (value === undefined || value === null) return [];
  if (!isMapping(value)) throw bundleError(file, 'batching', `expected a mapping, got ${describeValue(value)}`);
  for (const key of Object.keys(value)) {
    if (!BATCHING_KEYS.includes(key)) warn(`${file}: ${fieldPath('batching', key)}: unknown key, ignored`);
  }
  const sizes = value.compiled_batch_sizes ?? [];
  if (!Array.isArray(sizes)) {
    throw bundleError(
      file,
      'batching.compiled_batch_sizes',
      `expected a list of positive integers, got ${describeValue(sizes)}`,
    );
  }
  const seen = new Set<number>();
  sizes.forEach((n: unknown, i) => {
    const path = fieldPath('batching.compiled_batch_sizes', i);
    if (typeof n !== 'number' || !Number.isInteger(n) || n <= 0) {
      throw bundleError(file, path, `expected a positive integer, got ${describeValue(n)}`);
    }
    if (seen.has(n)) throw bundleError(file, path, `${n} is listed twice`);
    seen.add(n);
  });
  return [...seen].sort((a, b) => a - b);
}

function collectVariableAxes(inputs: readonly ExecutableTensorSpec[]): VariableAxis[] {
  const out: VariableAxis[] = [];
  inputs.forEach((s, inputIndex) => {
    [...s.letters].forEach((letter, manifestAxis) => {
      if (s.dims[letter] === VARIABLE_DIM) out.push({ input: s.name, inputIndex, letter, manifestAxis });
    });
  });
  return out;
}

/**
 * A module is compiled for concrete shapes, so a variable input axis is only servable when the
 * compiled extents are enumerated. Letters are shared across inputs here: an entry `{w: 1024}`
 * binds `w` of every input that has a variable `w` (the reference's rule).
 */
function parseInputShapes(
  value: unknown,
  kind: ManifestKind,
  axes: readonly VariableAxis[],
  file: string,
): InputShapeVariant[] {
  const present = value !== undefined && value !== null;
  if (kind === 'meta') {
    if (present)
      throw bundleError(file, 'input_shapes', 'not allowed with kind: meta (a meta model has no executable)');
    return [];
  }
  if (!present) {
    const first = axes[0];
    if (first) {
      throw bundleError(
        file,
        'input_shapes',
        `missing; executable_inputs[${first.inputIndex}].dims.${first.letter} is -1 (variable), so input_shapes must ` +
          'list the extents each compiled module was built for',
      );
    }
    return [];
  }
  if (axes.length === 0) {
    throw bundleError(file, 'input_shapes', 'only allowed when some executable input has a variable (-1) dim');
  }
  if (!Array.isArray(value))
    throw bundleError(file, 'input_shapes', `expected a list of mappings, got ${describeValue(value)}`);
  if (value.length === 0) throw bundleError(file, 'input_shapes', 'empty; list at least one compiled shape');
  const letters = [...new Set(axes.map((a) => a.letter))];
  const seen = new Map<string, number>();
  return value.map((entry: unknown, index) => {
    const path = fieldPath('input_shapes', index);
    if (!isMapping(entry)) {
      throw bundleError(file, path, `expected a mapping of variable letter to extent, got ${describeValue(entry)}`);
    }
    const extents: Record<string, number> = {};
    for (const [letter, extent] of Object.entries(entry)) {
      const p = fieldPath(path, letter);
      if (!letters.includes(letter)) {
        throw bundleError(
          file,
          p,
          `"${letter}" is not a variable axis; the variable letters are ${letters.join(', ')}`,
        );
      }
      if (typeof extent !== 'number' || !Number.isInteger(extent) || extent <= 0) {
        throw bundleError(file, p, `expected a positive integer, got ${describeValue(extent)}`);
      }
      extents[letter] = extent;
    }
    for (const letter of letters) {
      if (extents[letter] === undefined)
        throw bundleError(file, fieldPath(path, letter), 'missing; every variable letter needs an extent');
    }
    const key = axes.map((a) => extents[a.letter]!);
    const id = key.join(',');
    const first = seen.get(id);
    if (first !== undefined) throw bundleError(file, path, `same extents as input_shapes[${first}]`);
    seen.set(id, index);
    return { index, extents, key };
  });
}
