/**
 * Reading a bundle's files. A bundle directory is whatever an operator or a sync job put there, and
 * a name the bundle format reads (a module, the weights, the manifest, a hooks file) may be a FIFO,
 * a device or a socket. Opened plainly, a FIFO blocks until something writes to it, and it blocks
 * one of libuv's four threads that every file operation of the process shares: a few such files
 * stopped every later load, and the process's stop, for good; a device such as /dev/zero never
 * ends. Opened non-blocking, a FIFO opens at once; anything but a regular file is then refused
 * with the bundle's error, before a byte is read. O_NONBLOCK changes nothing for a regular file.
 */
import { constants, type Stats } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
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

function kindOf(s: Stats): string {
  if (s.isFIFO()) return 'a FIFO';
  if (s.isCharacterDevice()) return 'a character device';
  if (s.isBlockDevice()) return 'a block device';
  if (s.isSocket()) return 'a socket';
  if (s.isDirectory()) return 'a directory';
  return 'not a file';
}
