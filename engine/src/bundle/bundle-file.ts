/**
 * Reading a bundle's files. A bundle directory is whatever an operator or a sync job put there, and
 * a name the bundle format reads (a module, the weights, the manifest, a hooks file) may be a FIFO,
 * a device or a socket. Opened plainly, a FIFO blocks until something writes to it, and it blocks
 * one of libuv's four threads that every file operation of the process shares: a few such files
 * stopped every later load, and the process's stop, for good; a device such as /dev/zero never
 * ends. Opened non-blocking, a FIFO opens at once; anything but a regular file is then refused
 * with the bundle's error, before a byte is read. O_NONBLOCK changes nothing for a regular file.
 */
import { constants, type Dirent, type Stats } from 'node:fs';
import { type FileHandle, open, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { bundleError } from './bundle-error.js';

/** Opens `path` for reading if it is a regular file (after symlinks); a bundle error otherwise. */
export async function openBundleFile(path: string): Promise<FileHandle> {
  const handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const s = await handle.stat();
    if (!s.isFile()) throw bundleError(path, null, `is ${kindOf(s)}, not a regular file`);
    return handle;
  } catch (err) {
    await handle.close();
    throw err;
  }
}

/** The whole file (a Buffer of its own, at offset 0), if it is a regular file. */
export async function readBundleFile(path: string): Promise<Buffer>;
export async function readBundleFile(path: string, encoding: 'utf8'): Promise<string>;
export async function readBundleFile(path: string, encoding?: 'utf8'): Promise<Buffer | string> {
  const handle = await openBundleFile(path);
  try {
    return encoding === undefined ? await handle.readFile() : await handle.readFile(encoding);
  } finally {
    await handle.close();
  }
}

/**
 * Fills `bytes` from the file at `position`, `callBytes` at most per read call (each call holds one
 * of libuv's threads for its duration); returns how many were filled, fewer only where the file
 * ends first. fs.readFile cannot serve here past 2 GiB, and a single read call not past 2 GiB either.
 */
export async function readFully(
  handle: FileHandle,
  bytes: Uint8Array,
  position: number,
  callBytes = bytes.byteLength,
): Promise<number> {
  let filled = 0;
  while (filled < bytes.byteLength) {
    const want = Math.min(bytes.byteLength - filled, callBytes);
    const { bytesRead } = await handle.read(bytes, filled, want, position + filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return filled;
}

/** Entries looked at, at most, by checkBundleTree: a vendored node_modules can be large. */
const TREE_ENTRIES_MAX = 20_000;

/**
 * Refuses a bundle directory with a FIFO, a device or a socket anywhere under it (a symlink counts
 * as what it points to; linked directories are not entered). For bundles with hooks: their module
 * may import any file of the bundle, and Node's loader opens it plainly on the threads every file
 * operation shares, where a FIFO blocks for good (and holds the hook thread, which then cannot be
 * stopped). Files hloserve reads itself go through openBundleFile.
 */
export async function checkBundleTree(dir: string): Promise<void> {
  let seen = 0;
  const walk = async (rel: string): Promise<void> => {
    let entries: Dirent[];
    try {
      entries = await readdir(join(dir, rel), { withFileTypes: true });
    } catch (err) {
      throw bundleError(join(dir, rel), null, `cannot read: ${(err as Error).message}`, err);
    }
    for (const e of entries) {
      if (++seen > TREE_ENTRIES_MAX) return;
      const path = join(dir, rel, e.name);
      if (e.isDirectory()) await walk(join(rel, e.name));
      else if (e.isSymbolicLink()) {
        const target = await stat(path).catch(() => null);
        // A dangling link is the importer's problem (ENOENT), not a hang.
        if (target !== null && !target.isFile() && !target.isDirectory())
          throw bundleError(path, null, `is ${kindOf(target)}, not a regular file`);
      } else if (!e.isFile()) throw bundleError(path, null, `is ${kindOf(e)}, not a regular file`);
    }
  };
  await walk('');
}

function kindOf(s: Stats | Dirent): string {
  if (s.isFIFO()) return 'a FIFO';
  if (s.isCharacterDevice()) return 'a character device';
  if (s.isBlockDevice()) return 'a block device';
  if (s.isSocket()) return 'a socket';
  if (s.isDirectory()) return 'a directory';
  return 'not a file';
}
