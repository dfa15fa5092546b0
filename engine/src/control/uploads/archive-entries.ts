/**
 * What the archive readers share: the limits and their budget, the entries, and the interfaces of
 * the source an archive is read from and the sink its files go to (archive-io.ts has both kinds).
 */
import { ServeError } from '@hloserve/common/errors';

export type ArchiveFormat = 'tar' | 'tar.gz' | 'zip';

export interface ArchiveLimits {
  readonly maxFiles: number;
  /** Largest expanded file. */
  readonly maxFileBytes: number;
  /** All expanded files together. */
  readonly maxTotalBytes: number;
  /** Expanded bytes per archive byte, for compressed formats. */
  readonly maxRatio: number;
}

export interface ArchiveEntry {
  /** As written in the archive. */
  readonly name: string;
  readonly kind: 'file' | 'dir';
  /** The entry's position in the archive; a file's bytes went to the sink under it. */
  readonly index: number;
  readonly bytes: number;
}

/** An archive's bytes, read at random (zip) or in order (tar). */
export interface ArchiveSource {
  readonly size: number;
  /** Exactly the bytes [at, at + length), which lie within `size`. */
  read(at: number, length: number): Promise<Buffer>;
  /** The bytes [from, to) in chunks. */
  chunks(from: number, to: number): AsyncIterable<Buffer>;
}

/** Where the files' bytes go, entry by entry. */
export interface EntrySink {
  open(index: number): Promise<EntryWriter>;
}

export interface EntryWriter {
  write(chunk: Buffer): Promise<void>;
  close(): Promise<void>;
}

/**
 * Bytes per chunk an inflater hands out when it may hand out `upTo` in all: zlib's default, 16 KiB,
 * means a write per 16 KiB of a large file; a 1 MiB buffer for a small archive costs more than
 * its inflating.
 */
export const inflateChunkBytes = (upTo: number): number => Math.max(16 * 1024, Math.min(2 ** 20, upTo));

export const rejected = (message: string): ServeError => new ServeError('HLO_ERR_BUNDLE_INVALID', message);

export class Budget {
  files = 0;
  total = 0;
  constructor(private readonly limits: ArchiveLimits) {}
  take(name: string, bytes: number): void {
    if (++this.files > this.limits.maxFiles) throw rejected(`more than ${this.limits.maxFiles} entries`);
    if (bytes > this.limits.maxFileBytes)
      throw rejected(`${name}: ${bytes} bytes is over the ${this.limits.maxFileBytes}-byte file limit`);
    this.total += bytes;
    if (this.total > this.limits.maxTotalBytes)
      throw rejected(`files add up to more than ${this.limits.maxTotalBytes} bytes`);
  }
}
