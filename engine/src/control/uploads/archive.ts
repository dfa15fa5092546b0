/**
 * Reads an uploaded bundle archive (.tar, .tar.gz, .zip) into its file entries, refusing anything
 * a bundle never contains: links, devices, extended headers, encryption, zip64, entries whose
 * sizes or checksums do not add up, and archives that expand past the limits. The archive comes
 * from a source and each file's bytes go to a sink as they are read (archive-io.ts), so an upload
 * never sits in memory whole: a 2 GiB .tar.gz was held with its 4 GiB of tar beside it, in the
 * process that serves. Inflating runs on libuv's threads; the serving thread sees a chunk at a time.
 */
import { createGunzip } from 'node:zlib';
import {
  rejected,
  inflateChunkBytes,
  type ArchiveEntry,
  type ArchiveFormat,
  type ArchiveLimits,
  type ArchiveSource,
  type EntrySink,
} from './archive-entries.js';
import { ChunkReader, inflateInto } from './archive-io.js';
import { readTar } from './archive-tar.js';
import { readZip } from './archive-zip.js';

export const formatOf = (filename: string): ArchiveFormat | null =>
  /\.(tar\.gz|tgz)$/i.test(filename)
    ? 'tar.gz'
    : /\.tar$/i.test(filename)
      ? 'tar'
      : /\.zip$/i.test(filename)
        ? 'zip'
        : null;

export async function readArchive(
  source: ArchiveSource,
  format: ArchiveFormat,
  limits: ArchiveLimits,
  sink: EntrySink,
): Promise<ArchiveEntry[]> {
  if (format === 'zip') return readZip(source, limits, sink);
  if (format === 'tar') return readTar(new ChunkReader(source.chunks(0, source.size)), limits, sink);
  const cap = Math.min(limits.maxTotalBytes + 64 * 1024, Math.floor(source.size * limits.maxRatio) + 1024);
  let entries: ArchiveEntry[] = [];
  await inflateInto(
    source.chunks(0, source.size),
    createGunzip({ chunkSize: inflateChunkBytes(cap) }),
    async (tar) => {
      const reader = new ChunkReader(capped(tar, cap, limits));
      entries = await readTar(reader, limits, sink);
      // What follows the end marker is inflated too, so that a corrupt or oversized stream is
      // refused whatever its tar says, as when the whole stream was inflated at once.
      await reader.drain();
    },
    (message) => rejected(`not a valid gzip stream: ${message}`),
  );
  return entries;
}

/** The inflated stream, refused once it passes `cap` bytes in all. */
async function* capped(chunks: AsyncIterable<Buffer>, cap: number, limits: ArchiveLimits): AsyncIterable<Buffer> {
  let total = 0;
  for await (const chunk of chunks) {
    total += chunk.length;
    if (total > cap)
      throw rejected(`archive expands past the limits (ratio ${limits.maxRatio}:1, ${limits.maxTotalBytes} bytes)`);
    yield chunk;
  }
}
