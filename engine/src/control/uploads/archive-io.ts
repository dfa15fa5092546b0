/**
 * Where an archive's bytes come from and where its files go: the staged upload on disk and a
 * working directory for the service; a buffer and memory for tests. ChunkReader takes exact byte
 * counts out of a stream of chunks of any size, as the tar format needs.
 */
import type { FileHandle } from 'node:fs/promises';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Transform } from 'node:stream';
import { readFully } from '../../bundle/bundle-file.js';
import type { ArchiveSource, EntrySink, EntryWriter } from './archive-entries.js';

/** Bytes per read of a staged archive. */
const SOURCE_CHUNK_BYTES = 2 ** 20;
const EMPTY = Buffer.alloc(0);

/** An archive open as `handle`, `size` bytes long. */
export function fileSource(handle: FileHandle, size: number): ArchiveSource {
  const read = async (at: number, length: number): Promise<Buffer> => {
    const bytes = Buffer.allocUnsafe(length);
    const filled = await readFully(handle, bytes, at);
    if (filled < length) throw new Error(`the staged archive ends at byte ${at + filled} of ${size}`);
    return bytes;
  };
  return {
    size,
    read,
    async *chunks(from, to) {
      // A fresh buffer per chunk: the consumer may keep a view of it.
      for (let at = from; at < to; at += SOURCE_CHUNK_BYTES)
        yield await read(at, Math.min(SOURCE_CHUNK_BYTES, to - at));
    },
  };
}

/** An archive in memory; `chunkBytes` sets how it is cut when streamed. */
export function bufferSource(bytes: Buffer, chunkBytes = SOURCE_CHUNK_BYTES): ArchiveSource {
  return {
    size: bytes.length,
    read: async (at, length) => bytes.subarray(at, at + length),
    async *chunks(from, to) {
      for (let at = from; at < to; at += chunkBytes) yield bytes.subarray(at, Math.min(to, at + chunkBytes));
    },
  };
}

/** Each file of the archive as `<dir>/entry-<index>`, created new. */
export function directorySink(dir: string): EntrySink & { path(index: number): string } {
  const path = (index: number): string => join(dir, `entry-${index}`);
  return {
    path,
    async open(index) {
      // Created as writeFile would (0666 less the umask): these become the installed bundle's files.
      const handle = await open(path(index), 'wx');
      return {
        async write(chunk) {
          for (let at = 0; at < chunk.length;) at += (await handle.write(chunk, at, chunk.length - at)).bytesWritten;
        },
        close: () => handle.close(),
      };
    },
  };
}

/** Each file's bytes kept in memory, by index. */
export function memorySink(): EntrySink & { bytes(index: number): Buffer | undefined } {
  const files = new Map<number, Buffer[]>();
  return {
    bytes: (index) => (files.has(index) ? Buffer.concat(files.get(index)!) : undefined),
    async open(index): Promise<EntryWriter> {
      const parts: Buffer[] = [];
      files.set(index, parts);
      return {
        write: async (chunk) => void parts.push(chunk),
        close: async () => {},
      };
    },
  };
}

/** Exact byte counts out of chunks of any size. */
export class ChunkReader {
  readonly #chunks: AsyncIterator<Buffer>;
  #head: Buffer = EMPTY;
  #ended = false;

  constructor(chunks: AsyncIterable<Buffer>) {
    this.#chunks = chunks[Symbol.asyncIterator]();
  }

  /** The next `n` bytes, or null when the stream ends before them. */
  async exactly(n: number): Promise<Buffer | null> {
    if ((await this.#fill()) && this.#head.length >= n) return this.#take(n);
    const parts: Buffer[] = [];
    for (let got = 0; got < n;) {
      if (!(await this.#fill())) return null;
      const part = this.#take(n - got);
      parts.push(part);
      got += part.length;
    }
    return Buffer.concat(parts, n);
  }

  /** Hands the next `n` bytes to `fn` as they come; false when the stream ends before them. */
  async forward(n: number, fn: (chunk: Buffer) => Promise<void>): Promise<boolean> {
    for (let left = n; left > 0;) {
      if (!(await this.#fill())) return false;
      const part = this.#take(left);
      left -= part.length;
      await fn(part);
    }
    return true;
  }

  /** Reads the stream to its end. */
  async drain(): Promise<void> {
    this.#head = EMPTY;
    while (!this.#ended) if ((await this.#chunks.next()).done) this.#ended = true;
  }

  #take(n: number): Buffer {
    const part = this.#head.subarray(0, n);
    this.#head = this.#head.subarray(part.length);
    return part;
  }

  async #fill(): Promise<boolean> {
    while (this.#head.length === 0) {
      if (this.#ended) return false;
      const next = await this.#chunks.next();
      if (next.done) {
        this.#ended = true;
        return false;
      }
      this.#head = next.value;
    }
    return true;
  }
}

/**
 * Runs `consume` over what `inflater` makes of `input`. A failure of `consume` itself (a limit
 * refused, a sink's full disk) comes back as it is, even where the pipeline reports its own
 * teardown instead; a failure of the inflater (or of the input) is `corrupt(message)`.
 */
export async function inflateInto(
  input: AsyncIterable<Buffer>,
  inflater: Transform,
  consume: (out: AsyncIterable<Buffer>) => Promise<void>,
  corrupt: (message: string) => Error,
): Promise<void> {
  let inflaterError: unknown;
  const own: { error?: unknown } = {};
  // What the inflater throws reaches `consume` through its iteration: noted here, so that it is
  // not taken for consume's own failure.
  async function* watched(out: AsyncIterable<Buffer>): AsyncIterable<Buffer> {
    try {
      yield* out;
    } catch (error) {
      inflaterError = error;
      throw error;
    }
  }
  try {
    await pipeline(input, inflater, (out: AsyncIterable<Buffer>) =>
      consume(watched(out)).catch((error: unknown) => {
        if (error !== inflaterError && !('error' in own)) own.error = error;
        throw error;
      }),
    );
  } catch (err) {
    if ('error' in own) throw own.error;
    throw corrupt((err as Error).message);
  }
}
