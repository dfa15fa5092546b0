/**
 * A system shared-memory region: a POSIX shm object, which Linux backs with a file under
 * /dev/shm. The client writes and reads it with plain positioned file I/O, as the server does:
 * no mmap and no native module. The server opens the same object by its key once the region is
 * registered, so a tensor crosses between the processes without travelling in a message.
 */
import { open, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';

/** Where Linux keeps POSIX shm objects. */
export const SHM_ROOT = '/dev/shm';

export class SystemSharedMemoryRegion {
  /** The name the server knows the region by once registered. */
  readonly name: string;
  /** The POSIX shm key, '/' + the file's name under the root. */
  readonly key: string;
  readonly byteSize: number;
  readonly #file: FileHandle;
  readonly #path: string;
  #destroyed = false;

  private constructor(name: string, key: string, byteSize: number, file: FileHandle, path: string) {
    this.name = name;
    this.key = key;
    this.byteSize = byteSize;
    this.#file = file;
    this.#path = path;
  }

  /**
   * Creates (or truncates) the shm object `key` (default '/' + name) of `byteSize` bytes, readable
   * and writable by this user only.
   */
  static async create(
    name: string,
    byteSize: number,
    opts: { key?: string; root?: string } = {},
  ): Promise<SystemSharedMemoryRegion> {
    if (!Number.isSafeInteger(byteSize) || byteSize <= 0) {
      throw new RangeError(`shared memory region '${name}': byteSize ${byteSize} must be a positive integer`);
    }
    const key = opts.key ?? `/${name}`;
    if (!/^\/[A-Za-z0-9._-]+$/.test(key) || key === '/.' || key === '/..') {
      throw new RangeError(`shared memory key '${key}' is not a POSIX shm name ('/name')`);
    }
    const path = join(opts.root ?? SHM_ROOT, key.slice(1));
    const file = await open(path, 'w+', 0o600);
    try {
      await file.truncate(byteSize);
    } catch (err) {
      await file.close();
      await unlink(path).catch(() => undefined);
      throw err;
    }
    return new SystemSharedMemoryRegion(name, key, byteSize, file, path);
  }

  #check(offset: number, length: number): void {
    if (this.#destroyed) throw new Error(`shared memory region '${this.name}' was destroyed`);
    if (!Number.isSafeInteger(offset) || offset < 0 || length < 0 || offset + length > this.byteSize) {
      throw new RangeError(
        `shared memory region '${this.name}': [${offset}, ${offset + length}) is outside its ${this.byteSize} bytes`,
      );
    }
  }

  /** Writes `bytes` at `offset`. */
  async write(offset: number, bytes: Uint8Array): Promise<void> {
    this.#check(offset, bytes.byteLength);
    let done = 0;
    while (done < bytes.byteLength) {
      const { bytesWritten } = await this.#file.write(bytes, done, bytes.byteLength - done, offset + done);
      done += bytesWritten;
    }
  }

  /** Reads `length` bytes at `offset` into a fresh, 8-byte aligned array. */
  async read(offset: number, length: number): Promise<Uint8Array> {
    this.#check(offset, length);
    const out = new Uint8Array(length);
    let done = 0;
    while (done < length) {
      const { bytesRead } = await this.#file.read(out, done, length - done, offset + done);
      if (bytesRead === 0) throw new RangeError(`shared memory region '${this.name}' ended early`);
      done += bytesRead;
    }
    return out;
  }

  /** Closes and removes the shm object. Unregister it from the server first. */
  async destroy(): Promise<void> {
    if (this.#destroyed) return;
    this.#destroyed = true;
    await this.#file.close();
    await unlink(this.#path).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
  }
}
