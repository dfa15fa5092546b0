/**
 * A tar stream's entries: ustar or v7 headers for regular files and directories, every other type
 * refused by name; each file's bytes go to the sink as they stream by.
 */
import { Budget, rejected, type ArchiveEntry, type ArchiveLimits, type EntrySink } from './archive-entries.js';
import type { ChunkReader } from './archive-io.js';

const BLOCK = 512;

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

/** Reads entries up to the end marker (an all-zero block); what follows it is left unread. */
export async function readTar(reader: ChunkReader, limits: ArchiveLimits, sink: EntrySink): Promise<ArchiveEntry[]> {
  const out: ArchiveEntry[] = [];
  const budget = new Budget(limits);
  for (let index = 0; ; index++) {
    const h = await reader.exactly(BLOCK);
    if (h === null) throw rejected(`tar archive is truncated (no end marker after ${out.length} entries)`);
    if (h.every((x) => x === 0)) return out;
    const name0 = cstr(h, 0, 100);
    const prefix = h.subarray(257, 262).toString('latin1') === 'ustar' ? cstr(h, 345, 155) : '';
    const name = prefix ? `${prefix}/${name0}` : name0;
    const stored = parseInt(cstr(h, 148, 8).trim() || 'x', 8);
    let sum = 0;
    for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 32 : h[i]!;
    if (stored !== sum) throw rejected(`tar header ${out.length} ('${name}') has a bad checksum`);
    const sizeText = cstr(h, 124, 12).trim();
    if (!/^[0-7]+$/.test(sizeText)) throw rejected(`${name}: tar size field is not octal`);
    const size = parseInt(sizeText, 8);
    const type = String.fromCharCode(h[156]!);
    if (type in TAR_TYPES) throw rejected(`${name}: ${TAR_TYPES[type]} is not allowed in a bundle`);
    if (type !== '0' && type !== '\0' && type !== '5')
      throw rejected(`${name}: tar entry type '${type}' is not allowed`);
    const truncated = (): Error => rejected(`${name}: tar entry is truncated (${size} bytes declared)`);
    if (type === '5') {
      // A directory's size field is meaningless; its data, if any, is skipped like a file's.
      out.push({ name, kind: 'dir', index, bytes: 0 });
    } else {
      budget.take(name, size);
      const writer = await sink.open(index);
      let complete: boolean;
      try {
        complete = await reader.forward(size, (chunk) => writer.write(chunk));
      } finally {
        await writer.close();
      }
      if (!complete) throw truncated();
      out.push({ name, kind: 'file', index, bytes: size });
    }
    const padding = (BLOCK - (size % BLOCK)) % BLOCK;
    if (!(await reader.forward(type === '5' ? size + padding : padding, async () => {}))) throw truncated();
  }
}
