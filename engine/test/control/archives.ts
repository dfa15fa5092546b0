/** Writers of small tar and zip archives for upload tests (including the malformed ones). */
import { crc32, deflateRawSync, gzipSync } from 'node:zlib';

export interface TarEntryOptions {
  readonly type?: string;
  readonly linkname?: string;
  /** Declared size (default: the data's). */
  readonly size?: number;
  readonly corruptChecksum?: boolean;
}

export function tarEntry(name: string, data: Buffer | string, o: TarEntryOptions = {}): Buffer {
  const body = typeof data === 'string' ? Buffer.from(data) : data;
  const h = Buffer.alloc(512);
  h.write(name, 0, 100, 'utf8');
  h.write('0000644\0', 100);
  h.write('0000000\0', 108);
  h.write('0000000\0', 116);
  h.write((o.size ?? body.length).toString(8).padStart(11, '0') + '\0', 124);
  h.write('00000000000\0', 136);
  h.write(o.type ?? '0', 156);
  if (o.linkname) h.write(o.linkname, 157, 100);
  h.write('ustar\0', 257);
  h.write('00', 263);
  h.fill(32, 148, 156);
  let sum = 0;
  for (const b of h) sum += b;
  h.write((o.corruptChecksum ? sum + 1 : sum).toString(8).padStart(6, '0') + '\0 ', 148);
  const pad = Buffer.alloc((512 - (body.length % 512)) % 512);
  return Buffer.concat([h, body, pad]);
}

export const tar = (entries: Buffer[]): Buffer => Buffer.concat([...entries, Buffer.alloc(1024)]);
export const tgz = (entries: Buffer[]): Buffer => gzipSync(tar(entries));

export interface ZipEntry {
  readonly name: string;
  readonly data: Buffer | string;
  readonly deflate?: boolean;
  /** Unix mode with file type (e.g. 0o120777 for a symlink). */
  readonly mode?: number;
  readonly flags?: number;
  readonly crc?: number;
}

export function zip(entries: ZipEntry[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const e of entries) {
    const data = typeof e.data === 'string' ? Buffer.from(e.data) : e.data;
    const body = e.deflate ? deflateRawSync(data) : data;
    const name = Buffer.from(e.name);
    const crc = e.crc ?? crc32(data) >>> 0;
    const l = Buffer.alloc(30);
    l.writeUInt32LE(0x04034b50, 0);
    l.writeUInt16LE(20, 4);
    l.writeUInt16LE(e.flags ?? 0, 6);
    l.writeUInt16LE(e.deflate ? 8 : 0, 8);
    l.writeUInt32LE(crc, 14);
    l.writeUInt32LE(body.length, 18);
    l.writeUInt32LE(data.length, 22);
    l.writeUInt16LE(name.length, 26);
    const c = Buffer.alloc(46);
    c.writeUInt32LE(0x02014b50, 0);
    c.writeUInt16LE((3 << 8) | 20, 4);
    c.writeUInt16LE(20, 6);
    c.writeUInt16LE(e.flags ?? 0, 8);
    c.writeUInt16LE(e.deflate ? 8 : 0, 10);
    c.writeUInt32LE(crc, 16);
    c.writeUInt32LE(body.length, 20);
    c.writeUInt32LE(data.length, 24);
    c.writeUInt16LE(name.length, 28);
    c.writeUInt32LE(((e.mode ?? 0o100644) << 16) >>> 0, 38);
    c.writeUInt32LE(offset, 42);
    locals.push(l, name, body);
    centrals.push(c, name);
    offset += 30 + name.length + body.length;
  }
  const cd = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(cd.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, cd, end]);
}
