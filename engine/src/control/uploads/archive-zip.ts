/**
 * A zip archive's entries, found through its central directory: stored or deflated regular files
 * and directories; encryption, zip64, links and special files refused. Each file streams from its
 * range of the archive through the inflater to the sink, its CRC-32 and size checked as it goes.
 */
import { crc32, createInflateRaw } from 'node:zlib';
import {
  Budget,
  inflateChunkBytes,
  rejected,
  type ArchiveEntry,
  type ArchiveLimits,
  type ArchiveSource,
  type EntrySink,
  type EntryWriter,
} from './archive-entries.js';
import { inflateInto } from './archive-io.js';

/** A bundle has at most a few hundred files; a larger directory is refused before it is read. */
const MAX_CENTRAL_DIRECTORY_BYTES = 16 * 2 ** 20;

export async function readZip(source: ArchiveSource, limits: ArchiveLimits, sink: EntrySink): Promise<ArchiveEntry[]> {
  // The end-of-central-directory record sits in the last 22 + 65535 bytes.
  const tailAt = Math.max(0, source.size - 22 - 65535);
  const tail = await source.read(tailAt, source.size - tailAt);
  let eocdInTail = -1;
  for (let i = tail.length - 22; i >= 0; i--) {
    if (tail.readUInt32LE(i) === 0x06054b50) {
      eocdInTail = i;
      break;
    }
  }
  if (eocdInTail < 0) throw rejected('not a zip archive (no end of central directory; truncated?)');
  const eocd = tailAt + eocdInTail;
  const count = tail.readUInt16LE(eocdInTail + 10);
  const cdSize = tail.readUInt32LE(eocdInTail + 12);
  const cdOffset = tail.readUInt32LE(eocdInTail + 16);
  if (count === 0xffff || cdOffset === 0xffffffff) throw rejected('zip64 archives are not accepted');
  if (cdOffset + cdSize > eocd) throw rejected('zip central directory lies outside the archive');
  if (cdSize > MAX_CENTRAL_DIRECTORY_BYTES)
    throw rejected(`zip central directory is ${cdSize} bytes, over ${MAX_CENTRAL_DIRECTORY_BYTES}`);
  const cd = await source.read(cdOffset, cdSize);
  const out: ArchiveEntry[] = [];
  const budget = new Budget(limits);
  let p = 0;
  let expanded = 0;
  for (let n = 0; n < count; n++) {
    if (p + 46 > cd.length || cd.readUInt32LE(p) !== 0x02014b50)
      throw rejected(`zip central directory entry ${n} is malformed`);
    const flags = cd.readUInt16LE(p + 8);
    const method = cd.readUInt16LE(p + 10);
    const crc = cd.readUInt32LE(p + 16);
    const csize = cd.readUInt32LE(p + 20);
    const usize = cd.readUInt32LE(p + 24);
    const nameLen = cd.readUInt16LE(p + 28);
    const extraLen = cd.readUInt16LE(p + 30);
    const commentLen = cd.readUInt16LE(p + 32);
    const madeBy = cd.readUInt16LE(p + 4) >> 8;
    const mode = cd.readUInt32LE(p + 38) >>> 16;
    const local = cd.readUInt32LE(p + 42);
    if (p + 46 + nameLen > cd.length) throw rejected(`zip central directory entry ${n} is truncated`);
    const name = cd.subarray(p + 46, p + 46 + nameLen).toString('utf8');
    p += 46 + nameLen + extraLen + commentLen;
    if (flags & 1) throw rejected(`${name}: encrypted zip entries are not accepted`);
    // Unix hosts (3) keep the file type in the upper bits: only regular files and directories.
    const fileType = mode & 0o170000;
    if (madeBy === 3 && fileType !== 0 && fileType !== 0o100000 && fileType !== 0o040000)
      throw rejected(
        `${name}: ${fileType === 0o120000 ? 'a symbolic link' : 'a special file'} is not allowed in a bundle`,
      );
    const isDir = name.endsWith('/') || fileType === 0o040000;
    if (local + 30 > source.size) throw rejected(`${name}: zip local header is missing`);
    const header = await source.read(local, 30);
    if (header.readUInt32LE(0) !== 0x04034b50) throw rejected(`${name}: zip local header is missing`);
    const dataAt = local + 30 + header.readUInt16LE(26) + header.readUInt16LE(28);
    if (dataAt + csize > source.size) throw rejected(`${name}: zip entry is truncated`);
    if (isDir) {
      out.push({ name, kind: 'dir', index: n, bytes: 0 });
      continue;
    }
    budget.take(name, usize);
    expanded += usize;
    if (expanded > source.size * limits.maxRatio) throw rejected(`archive expands past ${limits.maxRatio}:1`);
    if (method !== 0 && method !== 8)
      throw rejected(`${name}: zip compression method ${method} is not supported (stored or deflate)`);
    const writer = await sink.open(n);
    let written: { bytes: number; crc: number };
    try {
      written = await copyEntry(source.chunks(dataAt, dataAt + csize), method === 8, usize, name, writer);
    } finally {
      await writer.close();
    }
    if (written.bytes !== usize) throw rejected(`${name}: expands to ${written.bytes} bytes, ${usize} declared`);
    if (written.crc !== crc) throw rejected(`${name}: CRC-32 does not match`);
    out.push({ name, kind: 'file', index: n, bytes: usize });
  }
  return out;
}

/** Streams one entry to `writer`; refuses it as soon as it passes its declared size. */
async function copyEntry(
  raw: AsyncIterable<Buffer>,
  deflated: boolean,
  declared: number,
  name: string,
  writer: EntryWriter,
): Promise<{ bytes: number; crc: number }> {
  let bytes = 0;
  let crc = 0;
  const consume = async (chunks: AsyncIterable<Buffer>): Promise<void> => {
    for await (const chunk of chunks) {
      bytes += chunk.length;
      if (bytes > declared) throw rejected(`${name}: expands past the ${declared} bytes declared`);
      crc = crc32(chunk, crc);
      await writer.write(chunk);
    }
  };
  if (!deflated) await consume(raw);
  else
    await inflateInto(raw, createInflateRaw({ chunkSize: inflateChunkBytes(declared) }), consume, (message) =>
      rejected(`${name}: deflate data is corrupt or larger than declared (${message})`),
    );
  return { bytes, crc: crc >>> 0 };
}
