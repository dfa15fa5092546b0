/**
 * One tensor of a manifest with named axes. The manifest writes axes column-major and batch-last
 * (as Julia does: `cwhn`); the wire (KServe, row-major) shape and the XLA shape are both those
 * letters reversed, so bytes never move. Everything that indexes a wire shape must use the
 * `wire*` fields here rather than reverse letters itself: the reference got this wrong in three
 * places (reactantserver.md §3), which is why the two orders are kept apart by name.
 */
import type { DType } from '@hloserve/native/dtype';
import { parseDTypeToken, type TensorRole } from '../dtypes.js';
import type { TensorDType } from '../tensor.js';
import { describeValue, isMapping } from '../config/describe-value.js';
import { bundleError, fieldPath } from './bundle-error.js';

/** Letters that mark the batch axis. */
export const BATCH_LETTERS: readonly string[] = ['n', 'b'];

/** A dims value of -1: the axis has a different extent per compiled variant or per request. */
export const VARIABLE_DIM = -1;

export interface TensorSpec<D extends TensorDType = TensorDType> {
  readonly name: string;
  readonly dtype: D;
  /** Axis letters in manifest order (column-major, batch last), e.g. `cwhn`. */
  readonly letters: string;
  /** The same letters in wire / XLA (row-major) order, e.g. `nhwc`. */
  readonly wireLetters: string;
  readonly rank: number;
  /** Extent of every non-batch letter: > 0 fixed, -1 variable. */
  readonly dims: Readonly<Record<string, number>>;
  /** Index of n/b in `letters`, or null for an unbatched tensor. */
  readonly batchAxisManifest: number | null;
  /** Index of n/b in the wire shape (`rank - 1 - batchAxisManifest`), or null. */
  readonly wireBatchAxis: number | null;
  /** Per wire axis: the extent every request must have, or null for the batch and variable axes. */
  readonly fixedExtents: readonly (number | null)[];
  /** Letters whose dims entry is -1, in manifest order. */
  readonly variableLetters: readonly string[];
  /**
   * The wire shape at a batch size (omitted: -1), with variable letters bound from `variables`
   * where given and -1 otherwise. This is also the XLA shape the module is compiled for.
   */
  wireShape(batch?: number, variables?: Readonly<Record<string, number>>): number[];
}

export type ExecutableTensorSpec = TensorSpec<DType>;

export interface TensorSpecInit<D extends TensorDType> {
  readonly name: string;
  readonly dtype: D;
  readonly letters: string;
  readonly dims: Readonly<Record<string, number>>;
}

/** Builds a spec from already-validated parts (parseTensorSpec is the checked path). */
export function makeTensorSpec<D extends TensorDType>(init: TensorSpecInit<D>): TensorSpec<D> {
  const { name, dtype, letters } = init;
  const dims = Object.freeze({ ...init.dims });
  const rank = letters.length;
  const manifestBatch = [...letters].findIndex((c) => BATCH_LETTERS.includes(c));
  const batchAxisManifest = manifestBatch < 0 ? null : manifestBatch;
  const wireLetters = [...letters].reverse().join('');
  const fixedExtents = [...wireLetters].map((c) => {
    const d = dims[c];
    return d === undefined || d === VARIABLE_DIM ? null : d;
  });
  const variableLetters = [...letters].filter((c) => dims[c] === VARIABLE_DIM);
  return {
    name,
    dtype,
    letters,
    wireLetters,
    rank,
    dims,
    batchAxisManifest,
    wireBatchAxis: batchAxisManifest === null ? null : rank - 1 - batchAxisManifest,
    fixedExtents: Object.freeze(fixedExtents),
    variableLetters: Object.freeze(variableLetters),
    wireShape(batch?: number, variables?: Readonly<Record<string, number>>): number[] {
      return [...wireLetters].map((c) => {
        if (BATCH_LETTERS.includes(c)) return batch ?? VARIABLE_DIM;
        const d = dims[c]!;
        return d === VARIABLE_DIM ? (variables?.[c] ?? VARIABLE_DIM) : d;
      });
    },
  };
}

const SPEC_KEYS = ['name', 'dtype', 'shape', 'dims'];

export interface TensorSpecContext {
  /** The manifest file, for messages. */
  readonly file: string;
  /** Field path of this entry, e.g. `executable_inputs[0]`. */
  readonly path: string;
  readonly role: TensorRole;
  /** Unknown keys are reported here rather than failing (reference bundles may carry extras). */
  readonly warn: (message: string) => void;
}

/** Validates one manifest tensor entry (reactantserver.md §3 shape-string rules). */
export function parseTensorSpec(raw: unknown, ctx: TensorSpecContext): TensorSpec {
  const { file, path } = ctx;
  if (!isMapping(raw)) {
    throw bundleError(file, path, `expected a mapping {name, dtype, shape, dims}, got ${describeValue(raw)}`);
  }
  for (const key of Object.keys(raw)) {
    if (!SPEC_KEYS.includes(key)) ctx.warn(`${file}: ${fieldPath(path, key)}: unknown key, ignored`);
  }

  const name = raw.name;
  if (typeof name !== 'string' || name === '') {
    throw bundleError(file, fieldPath(path, 'name'), `expected a non-empty string, got ${describeValue(name)}`);
  }

  const dtype = parseDTypeToken(raw.dtype, ctx.role);
  if (!dtype.ok) throw bundleError(file, fieldPath(path, 'dtype'), dtype.error);

  const shapePath = fieldPath(path, 'shape');
  const letters = raw.shape;
  if (typeof letters !== 'string') {
    throw bundleError(
      file,
      shapePath,
      `expected a string of axis letters (e.g. "cwhn"), got ${describeValue(letters)}`,
    );
  }
  const seen = new Set<string>();
  let batchLetter: string | null = null;
  for (const c of letters) {
    if (!/^[A-Za-z]$/.test(c)) {
      throw bundleError(file, shapePath, `${JSON.stringify(letters)}: ${JSON.stringify(c)} is not an ASCII letter`);
    }
    if (seen.has(c)) throw bundleError(file, shapePath, `${JSON.stringify(letters)}: letter "${c}" appears twice`);
    seen.add(c);
    if (BATCH_LETTERS.includes(c)) {
      if (batchLetter !== null) {
        throw bundleError(
          file,
          shapePath,
          `${JSON.stringify(letters)}: more than one batch axis ("${batchLetter}" and "${c}"); n and b both mark the batch`,
        );
      }
      batchLetter = c;
    }
  }

  const dimsPath = fieldPath(path, 'dims');
  const rawDims = raw.dims ?? {};
  if (!isMapping(rawDims)) {
    throw bundleError(file, dimsPath, `expected a mapping of letter to extent, got ${describeValue(rawDims)}`);
  }
  const dims: Record<string, number> = {};
  for (const [key, value] of Object.entries(rawDims)) {
    const keyPath = fieldPath(dimsPath, key);
    if (BATCH_LETTERS.includes(key)) {
      throw bundleError(file, keyPath, `"${key}" is the batch axis; its extent comes from the request, not dims`);
    }
    if (!seen.has(key)) {
      throw bundleError(file, keyPath, `"${key}" is not a letter of shape ${JSON.stringify(letters)}`);
    }
    if (typeof value !== 'number' || !Number.isInteger(value) || (value <= 0 && value !== VARIABLE_DIM)) {
      throw bundleError(file, keyPath, `expected an integer > 0 or -1, got ${describeValue(value)}`);
    }
    dims[key] = value;
  }
  for (const c of letters) {
    if (!BATCH_LETTERS.includes(c) && dims[c] === undefined) {
      throw bundleError(
        file,
        fieldPath(dimsPath, c),
        `missing; shape ${JSON.stringify(letters)} uses "${c}", so dims needs its extent (> 0, or -1 for variable)`,
      );
    }
  }
  return makeTensorSpec({ name, dtype: dtype.dtype, letters, dims });
}
