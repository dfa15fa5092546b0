/**
 * safetensors reader: an 8-byte little-endian header length, a JSON header, then raw data.
 * The header is validated completely before any tensor is handed out, because the data offsets
 * come from a file someone uploaded and are later used to slice device uploads. Tensors are
 * zero-copy views into one file buffer; the header alone can be read without the data so that
 * loading a bundle does not pull gigabytes of weights into memory before the weight cache asks.
 */
import type { FileHandle } from 'node:fs/promises';
import type { DType } from '@hloserve/native/dtype';
import { DTYPE_BYTES } from '@hloserve/native/dtype';
import { describeValue, isMapping } from '../config/describe-value.js';
import { ServeError } from '@hloserve/common/errors';
import { bundleError, fieldPath } from './bundle-error.js';
import { openBundleFile, readBundleFile } from './bundle-file.js';
import { dtypeFromSafetensors, SAFETENSORS_DTYPES } from './safetensors-dtype.js';

/** The safetensors crate's own limit; a larger header means a corrupt or hostile file. */
export const MAX_HEADER_BYTES = 100_000_000;

const METADATA_KEY = '__metadata__';

export interface SafetensorsEntry {
  readonly name: string;
  readonly dtype: DType;
  /** As stored: for weights that is the XLA (row-major) shape. */
  readonly shape: readonly number[];
  /** Absolute offset of the first byte in the file. */
  readonly byteOffset: number;
  readonly byteLength: number;
}

export interface SafetensorsHeader {
  readonly file: string;
  readonly fileSize: number;
  /** Where the data section starts (8 + header length). */
  readonly dataOffset: number;
  /** In data order (JSON key order is not reliable for numeric-looking names). */
  readonly entries: readonly SafetensorsEntry[];
  readonly metadata: Readonly<Record<string, string>>;
  entry(name: string): SafetensorsEntry | undefined;
}

export interface SafetensorsTensor extends SafetensorsEntry {
  /** A view into `SafetensorsFile.buffer`; never copied. */
  readonly data: Uint8Array;
}

export interface SafetensorsFile extends SafetensorsHeader {
  readonly buffer: Uint8Array;
  readonly tensors: readonly SafetensorsTensor[];
  tensor(name: string): SafetensorsTensor | undefined;
}

/** Reads and validates only the header; the data section stays on disk. */
export async function readSafetensorsHeader(path: string): Promise<SafetensorsHeader> {
  const handle = await openSafetensors(path);
  try {
    return await readHeaderFrom(handle, path);
  } finally {
    await handle.close();
  }
}

/** Opens `path` as a bundle file; a failure is the bundle's error naming it. */
export async function openSafetensors(path: string): Promise<FileHandle> {
  try {
    return await openBundleFile(path);
  } catch (err) {
    if (err instanceof ServeError) throw err;
    throw bundleError(path, null, `cannot open: ${(err as Error).message}`, err);
  }
}

/** The validated header of the file open as `handle`. */
export async function readHeaderFrom(handle: FileHandle, path: string): Promise<SafetensorsHeader> {
  const { size } = await handle.stat();
  const prefix = new Uint8Array(8);
  const { bytesRead } = await handle.read(prefix, 0, 8, 0);
  const headerLength = headerLengthOf(prefix.subarray(0, bytesRead), size, path);
  const json = new Uint8Array(headerLength);
  await handle.read(json, 0, headerLength, 8);
  return parseHeader(json, size, path);
}

/** Reads the whole file into one buffer and returns views into it. */
export async function readSafetensors(path: string): Promise<SafetensorsFile> {
  let bytes: Uint8Array;
  try {
    // readFile returns a Buffer that owns its memory at offset 0 (never a pool slice), so each
    // tensor's view keeps the alignment the writer gave it.
    bytes = await readBundleFile(path);
  } catch (err) {
    if (err instanceof ServeError) throw err;
    throw bundleError(path, null, `cannot read: ${(err as Error).message}`, err);
  }
  return parseSafetensors(bytes, path);
}

/** Validates `buffer` as a safetensors file; `file` names it in messages. */
export function parseSafetensors(buffer: Uint8Array, file: string): SafetensorsFile {
  const headerLength = headerLengthOf(buffer.subarray(0, 8), buffer.byteLength, file);
  const header = parseHeader(buffer.subarray(8, 8 + headerLength), buffer.byteLength, file);
  const tensors = header.entries.map((e) => ({
    ...e,
    data: buffer.subarray(e.byteOffset, e.byteOffset + e.byteLength),
  }));
  const byName = new Map(tensors.map((t) => [t.name, t]));
  return { ...header, buffer, tensors, tensor: (name) => byName.get(name) };
}

function headerLengthOf(prefix: Uint8Array, fileSize: number, file: string): number {
  if (prefix.byteLength < 8) {
    throw bundleError(file, null, `${fileSize} bytes is too short for a safetensors file (8-byte header length first)`);
  }
  const length = new DataView(prefix.buffer, prefix.byteOffset, 8).getBigUint64(0, true);
  if (length < 2n || length > BigInt(MAX_HEADER_BYTES) || length > BigInt(fileSize - 8)) {
    throw bundleError(
      file,
      'header length',
      `${length} is not a plausible JSON header length for a ${fileSize}-byte file (at most ${Math.min(MAX_HEADER_BYTES, fileSize - 8)})`,
    );
  }
  return Number(length);
}

function parseHeader(json: Uint8Array, fileSize: number, file: string): SafetensorsHeader {
  let raw: unknown;
  try {
    raw = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(json));
  } catch (err) {
    throw bundleError(file, 'header', `not valid UTF-8 JSON: ${(err as Error).message}`, err);
  }
  if (!isMapping(raw)) throw bundleError(file, 'header', `expected a JSON object, got ${describeValue(raw)}`);
  const dataOffset = 8 + json.byteLength;
  const dataSize = fileSize - dataOffset;

  let metadata: Record<string, string> = {};
  const entries: SafetensorsEntry[] = [];
  for (const [name, value] of Object.entries(raw)) {
    if (name === METADATA_KEY) {
      metadata = parseMetadata(value, file);
      continue;
    }
    entries.push(parseEntry(name, value, dataOffset, dataSize, file));
  }

  // Sorted by start, any overlap shows up between neighbours.
  entries.sort((a, b) => a.byteOffset - b.byteOffset || a.byteLength - b.byteLength);
  for (let i = 1; i < entries.length; i++) {
    const prev = entries[i - 1]!;
    const cur = entries[i]!;
    if (cur.byteOffset < prev.byteOffset + prev.byteLength) {
      throw bundleError(
        file,
        fieldPath(tensorPath(cur.name), 'data_offsets'),
        `overlaps tensor ${JSON.stringify(prev.name)} (bytes ${prev.byteOffset - dataOffset}..${prev.byteOffset - dataOffset + prev.byteLength} of the data section)`,
      );
    }
  }
  const byName = new Map(entries.map((e) => [e.name, e]));
  return { file, fileSize, dataOffset, entries, metadata, entry: (name) => byName.get(name) };
}

function tensorPath(name: string): string {
  return `tensors[${JSON.stringify(name)}]`;
}

function parseMetadata(value: unknown, file: string): Record<string, string> {
  if (!isMapping(value))
    throw bundleError(file, METADATA_KEY, `expected an object of strings, got ${describeValue(value)}`);
  for (const [k, v] of Object.entries(value)) {
    if (typeof v !== 'string') {
      throw bundleError(
        file,
        fieldPath(METADATA_KEY, k),
        `expected a string (safetensors metadata values are strings), got ${describeValue(v)}`,
      );
    }
  }
  return value as Record<string, string>;
}

function parseEntry(
  name: string,
  value: unknown,
  dataOffset: number,
  dataSize: number,
  file: string,
): SafetensorsEntry {
  const path = tensorPath(name);
  if (!isMapping(value))
    throw bundleError(file, path, `expected {dtype, shape, data_offsets}, got ${describeValue(value)}`);
  const dtype = dtypeFromSafetensors(value.dtype as string);
  if (typeof value.dtype !== 'string' || dtype === undefined) {
    throw bundleError(
      file,
      fieldPath(path, 'dtype'),
      `unsupported dtype ${describeValue(value.dtype)}; expected one of ${Object.keys(SAFETENSORS_DTYPES).join(' ')}`,
    );
  }
  const shape = value.shape;
  if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
    throw bundleError(
      file,
      fieldPath(path, 'shape'),
      `expected a list of non-negative integers, got ${JSON.stringify(shape)}`,
    );
  }
  const offsets = value.data_offsets;
  const offsetsPath = fieldPath(path, 'data_offsets');
  if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every((o) => Number.isSafeInteger(o) && o >= 0)) {
    throw bundleError(
      file,
      offsetsPath,
      `expected [begin, end] as non-negative integers, got ${JSON.stringify(offsets)}`,
    );
  }
  const [begin, end] = offsets as [number, number];
  if (begin > end || end > dataSize) {
    throw bundleError(file, offsetsPath, `[${begin}, ${end}] is outside the ${dataSize}-byte data section`);
  }
  const expected = (shape as number[]).reduce((n, d) => n * d, 1) * DTYPE_BYTES[dtype];
  if (end - begin !== expected) {
    throw bundleError(
      file,
      offsetsPath,
      `[${begin}, ${end}] holds ${end - begin} bytes but ${value.dtype} ${JSON.stringify(shape)} needs ${expected}`,
    );
  }
  return { name, dtype, shape: shape as number[], byteOffset: dataOffset + begin, byteLength: end - begin };
}

/**
 * `__metadata__.argument_order`: a JSON-encoded list of tensor names, the order in which the
 * weights follow the inputs in `main`. Without it the order would be a guess (JSON key order),
 * so a weights file that holds tensors must say it.
 */
export function readArgumentOrder(header: SafetensorsHeader): string[] {
  const { file } = header;
  const path = `${METADATA_KEY}.argument_order`;
  const text = header.metadata.argument_order;
  if (text === undefined) {
    if (header.entries.length === 0) return [];
    throw bundleError(
      file,
      path,
      `missing; the file holds ${header.entries.length} tensors, so it must list the order in which main takes them`,
    );
  }
  let order: unknown;
  try {
    order = JSON.parse(text);
  } catch {
    throw bundleError(file, path, `expected a JSON list of tensor names, got ${JSON.stringify(text)}`);
  }
  if (!Array.isArray(order))
    throw bundleError(file, path, `expected a JSON list of tensor names, got ${JSON.stringify(text)}`);
  const seen = new Set<string>();
  order.forEach((name: unknown, i) => {
    const p = fieldPath(path, i);
    if (typeof name !== 'string') throw bundleError(file, p, `expected a tensor name, got ${describeValue(name)}`);
    if (seen.has(name)) throw bundleError(file, p, `"${name}" is listed twice`);
    if (!header.entry(name)) throw bundleError(file, p, `names tensor "${name}", which is not in the file`);
    seen.add(name);
  });
  return order as string[];
}
