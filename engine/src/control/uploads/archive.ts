/**
 * Reads an uploaded bundle archive (.tar, .tar.gz, .zip) into its file entries, refusing anything
 * a bundle never contains: links, devices, extended headers, encryption, zip64, entries whose
 * sizes or checksums do not add up, and archives that expand past the limits. Bytes in, entries
 * or a ServeError naming the entry and the reason out; nothing touches the disk. The serving thread
 * is the caller's: archives are inflated on libuv's threads and checksummed a slice at a time, since
 * done in one call each held every model's requests for as long (400 ms per 256 MiB inflated).
 */
import { constants as bufferConstants } from 'node:buffer';
import { promisify } from 'node:util';
import { gunzip, inflateRaw, type ZlibOptions } from 'node:zlib';
import { ServeError } from '@hloserve/common/errors';
import { crc32InSlices } from '../../device/chunked-hash.js';

const BUFFER_MAX_BYTES = bufferConstants.MAX_LENGTH;

const gunzipOffThread = promisify(gunzip) as (b: Buffer, o: ZlibOptions) => Promise<Buffer>;
const inflateRawOffThread = promisify(inflateRaw) as (b: Buffer, o: ZlibOptions) => Promise<Buffer>;

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
  readonly data: Buffer;
}

export const formatOf = (filename: string): ArchiveFormat | null =>
  /\.(tar\.gz|tgz)$/i.test(filename)
    ? 'tar.gz'
    : /\.tar$/i.test(filename)
      ? 'tar'
      : /\.zip$/i.test(filename)
        ? 'zip'
        : null;

export const rejected = (message: string): ServeError => new ServeError('HLO_ERR_BUNDLE_INVALID', message);

export async function readArchive(
  bytes: Buffer,
  format: ArchiveFormat,
  limits: ArchiveLimits,
): Promise<ArchiveEntry[]> {
  if (format === 'zip') return readZip(bytes, limits);
  if (format === 'tar') return readTar(bytes, limits);
  // The tar is one Buffer: never asked past the longest there can be (4 GiB), which zlib refuses
  // outright; an archive over 42 MB asked for more under the default limits and was refused.
  const cap = Math.min(
    limits.maxTotalBytes + 64 * 1024,
    Math.floor(bytes.length * limits.maxRatio) + 1024,
    BUFFER_MAX_BYTES,
  );
  let tar: Buffer;
  try {
    tar = await gunzipOffThread(bytes, { maxOutputLength: cap });
  } catch (err) {
    const e = err as { code?: string; message: string };
    if (e.code === 'ERR_BUFFER_TOO_LARGE' || /Cannot create a Buffer larger|maxOutputLength/i.test(e.message))
      throw rejected(`archive expands past the limits (ratio ${limits.maxRatio}:1, ${limits.maxTotalBytes} bytes)`);
    throw rejected(`not a valid gzip stream: ${e.message}`);
  }
  return readTar(tar, limits);
}

class Budget {
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

const cstr = (b: Buffer, at: number, len: number): string => {
  const s = b.subarray(at, at + len);
  const nul = s.indexOf(0);
  return s.subarray(0, nul < 0 ? len : nul).toString('utf8');
};

const TAR_TYPES: Record<string, string> = {
  '1': 'a hard link',
  '2': 'a symbolic link',
  '3': 'a character device',
  '4': 'a block device',
  '6': 'a FIFO',
  '7': 'a contiguous file',
  x: 'a pax extended header',
  g: 'a pax global header',
  L: 'a GNU long name',
  K: 'a GNU long link name',
};

function readTar(b: Buffer, limits: ArchiveLimits): ArchiveEntry[] {
  const out: ArchiveEntry[] = [];
  const budget = new Budget(limits);
  let at = 0;
  for (;;) {
    if (at + 512 > b.length) throw rejected(`tar archive is truncated (no end marker after ${out.length} entries)`);
    const h = b.subarray(at, at + 512);
    if (h.every((x) => x === 0)) return out;
    const name0 = cstr(h, 0, 100);
    const prefix = h.subarray(257, 262).toString('latin1') === 'ustar' ? cstr(h, 345, 155) : '';
    const name = prefix ? `${prefix}/${name0}` : name0;
    const stored = parseInt(cstr(h, 148, 8).trim() || 'x', 8);
    let sum = 0;
    for (let i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? 32 : h[i]!;
    if (stored !== sum) throw rejected(`tar header ${out.length} ('${name}') has a bad checksum`);
    const sizeText = cstr(h, 124, 12).trim();
    if (!/^[0-7]+$/.test(sizeText)) throw rejected(`${name}: tar size field is not octal`);
    const size = parseInt(sizeText, 8);
    const type = String.fromCharCode(h[156]!);
    if (type in TAR_TYPES) throw rejected(`${name}: ${TAR_TYPES[type]} is not allowed in a bundle`);
    if (type !== '0' && type !== '\0' && type !== '5')
      throw rejected(`${name}: tar entry type '${type}' is not allowed`);
    const start = at + 512;
    if (start + size > b.length) throw rejected(`${name}: tar entry is truncated (${size} bytes declared)`);
    if (type === '5') out.push({ name, kind: 'dir', data: Buffer.alloc(0) });
    else {
      budget.take(name, size);
      out.push({ name, kind: 'file', data: b.subarray(start, start + size) });
    }
    at = start + Math.ceil(size / 512) * 512;
  }
}

async function readZip(b: Buffer, limits: ArchiveLimits): Promise<ArchiveEntry[]> {
  // The end-of-central-directory record sits in the last 22 + 65535 bytes.
  let eocd = -1;
  for (let i = b.length - 22; i >= Math.max(0, b.length - 22 - 65535); i--) {
    if (b.readUInt32LE(i) === 0x06054b50) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw rejected('not a zip archive (no end of central directory; truncated?)');
  const count = b.readUInt16LE(eocd + 10);
  const cdSize = b.readUInt32LE(eocd + 12);
  const cdOffset = b.readUInt32LE(eocd + 16);
  if (count === 0xffff || cdOffset === 0xffffffff) throw rejected('zip64 archives are not accepted');
  if (cdOffset + cdSize > eocd) throw rejected('zip central directory lies outside the archive');
  const out: ArchiveEntry[] = [];
  const budget = new Budget(limits);
  let p = cdOffset;
  let expanded = 0;
  for (let n = 0; n < count; n++) {
    if (p + 46 > eocd || b.readUInt32LE(p) !== 0x02014b50)
      throw rejected(`zip central directory entry ${n} is malformed`);
    const flags = b.readUInt16LE(p + 8);
    const method = b.readUInt16LE(p + 10);
    const crc = b.readUInt32LE(p + 16);
    const csize = b.readUInt32LE(p + 20);
    const usize = b.readUInt32LE(p + 24);
    const nameLen = b.readUInt16LE(p + 28);
    const extraLen = b.readUInt16LE(p + 30);
    const commentLen = b.readUInt16LE(p + 32);
    const madeBy = b.readUInt16LE(p + 4) >> 8;
    const mode = b.readUInt32LE(p + 38) >>> 16;
    const local = b.readUInt32LE(p + 42);
    if (p + 46 + nameLen > eocd) throw rejected(`zip central directory entry ${n} is truncated`);
    const name = b.subarray(p + 46, p + 46 + nameLen).toString('utf8');
    p += 46 + nameLen + extraLen + commentLen;
    if (flags & 1) throw rejected(`${name}: encrypted zip entries are not accepted`);
    // Unix hosts (3) keep the file type in the upper bits: only regular files and directories.
    const fileType = mode & 0o170000;
    if (madeBy === 3 && fileType !== 0 && fileType !== 0o100000 && fileType !== 0o040000)
      throw rejected(
        `${name}: ${fileType === 0o120000 ? 'a symbolic link' : 'a special file'} is not allowed in a bundle`,
      );
    const isDir = name.endsWith('/') || fileType === 0o040000;
    if (local + 30 > b.length || b.readUInt32LE(local) !== 0x04034b50)
      throw rejected(`${name}: zip local header is missing`);
    const dataAt = local + 30 + b.readUInt16LE(local + 26) + b.readUInt16LE(local + 28);
    if (dataAt + csize > b.length) throw rejected(`${name}: zip entry is truncated`);
    if (isDir) {
      out.push({ name, kind: 'dir', data: Buffer.alloc(0) });
      continue;
    }
    budget.take(name, usize);
    expanded += usize;
    if (expanded > b.length * limits.maxRatio) throw rejected(`archive expands past ${limits.maxRatio}:1`);
    const raw = b.subarray(dataAt, dataAt + csize);
    let data: Buffer;
    if (method === 0) data = raw;
    else if (method === 8) {
      try {
        data = await inflateRawOffThread(raw, { maxOutputLength: Math.max(usize, 1) });
      } catch (err) {
        throw rejected(`${name}: deflate data is corrupt or larger than declared (${(err as Error).message})`);
      }
    } else throw rejected(`${name}: zip compression method ${method} is not supported (stored or deflate)`);
    if (data.length !== usize) throw rejected(`${name}: expands to ${data.length} bytes, ${usize} declared`);
    if ((await crc32InSlices(data)) !== crc) throw rejected(`${name}: CRC-32 does not match`);
    out.push({ name, kind: 'file', data });
  }
  return out;
}
