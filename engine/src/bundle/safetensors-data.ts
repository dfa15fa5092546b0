/**
 * The data of a safetensors file's named tensors, read a segment at a time. The whole file in one
 * buffer (fs.readFile) stops at 2 GiB, and a Buffer at 4 GiB: a model with more weights than that
 * could not load at all. Tensors that lie close together in the file share a segment of at most
 * SEGMENT_BYTES, so a model of many small tensors still costs few reads; a segment starts on a
 * page boundary of the file, so every tensor keeps the alignment it had in a whole-file buffer.
 */
import { constants as bufferConstants } from 'node:buffer';
import type { FileHandle } from 'node:fs/promises';
import { adviseHugePages } from '@hloserve/native/memory-advice';
import { bundleError } from './bundle-error.js';
import { readFully } from './bundle-file.js';
import {
  openSafetensors,
  readHeaderFrom,
  type SafetensorsEntry,
  type SafetensorsHeader,
  type SafetensorsTensor,
} from './safetensors.js';

/** The most one segment's buffer holds, unless a single tensor is larger. */
export const SEGMENT_BYTES = 2 ** 30;
/** Bytes of unused tensors between two used ones that are read rather than starting a new segment. */
const GAP_READ_BYTES = 2 ** 20;
/** Bytes per read call: each is one of libuv's threads for its duration, as readFile's are. */
const READ_CALL_BYTES = 64 * 2 ** 20;
const PAGE = 4096;

export interface SafetensorsData {
  readonly header: SafetensorsHeader;
  /** In the order named; views into the segments, never copied. */
  readonly tensors: readonly SafetensorsTensor[];
}

/**
 * Reads the header and the data of `names` (each must be in the file; the caller names what is
 * missing). `segmentBytes` is for tests.
 */
export async function readSafetensorsData(
  path: string,
  names: readonly string[],
  segmentBytes = SEGMENT_BYTES,
): Promise<SafetensorsData> {
  const handle = await openSafetensors(path);
  try {
    const header = await readHeaderFrom(handle, path);
    const wanted = [...new Set(names)].map((n) => header.entry(n)).filter((e) => e !== undefined);
    const views = new Map<string, Uint8Array>();
    for (const segment of plan(wanted, segmentBytes)) {
      const bytes = await readRange(handle, path, segment.start, segment.end);
      for (const e of segment.entries) {
        views.set(e.name, bytes.subarray(e.byteOffset - segment.start, e.byteOffset - segment.start + e.byteLength));
      }
    }
    const tensors = names.flatMap((n) => {
      const e = header.entry(n);
      return e ? [{ ...e, data: views.get(n)! }] : [];
    });
    return { header, tensors };
  } finally {
    await handle.close();
  }
}

interface Segment {
  readonly start: number;
  end: number;
  readonly entries: SafetensorsEntry[];
}

function plan(entries: readonly SafetensorsEntry[], segmentBytes: number): Segment[] {
  const segments: Segment[] = [];
  let current: Segment | null = null;
  for (const e of [...entries].sort((a, b) => a.byteOffset - b.byteOffset)) {
    const end = e.byteOffset + e.byteLength;
    if (
      current !== null &&
      e.byteOffset - current.end <= GAP_READ_BYTES &&
      Math.max(current.end, end) - current.start <= segmentBytes
    ) {
      current.end = Math.max(current.end, end);
      current.entries.push(e);
      continue;
    }
    current = { start: e.byteOffset - (e.byteOffset % PAGE), end, entries: [e] };
    segments.push(current);
  }
  return segments;
}

async function readRange(handle: FileHandle, path: string, start: number, end: number): Promise<Buffer> {
  const length = end - start;
  if (length > bufferConstants.MAX_LENGTH) {
    throw bundleError(
      path,
      null,
      `a tensor of ${length} bytes is larger than the longest buffer this server can hold (${bufferConstants.MAX_LENGTH} bytes)`,
    );
  }
  // Every byte is read below before the buffer is handed out; a short file is an error.
  const bytes = Buffer.allocUnsafeSlow(length);
  adviseHugePages(bytes);
  const filled = await readFully(handle, bytes, start, READ_CALL_BYTES);
  if (filled < length)
    throw bundleError(path, null, `ends at byte ${start + filled}, inside the data its header declares`);
  return bytes;
}
