import { closeSync, constants as fsc, fstatSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { quote, ServeError } from '@hloserve/common/errors';
import {
  mapSharedMemory,
  readSharedMemory,
  SharedMemoryError,
  sharedMemoryFaulted,
  writeSharedMemory,
} from '@hloserve/native';

export interface RegionStatus {
  readonly name: string;
  readonly key: string;
  readonly offset: number;
  readonly byteSize: number;
}

interface Region extends RegionStatus {
  readonly fd: number;
  /** The registered window mapped once (null: the addon could not map it, so reads copy). */
  readonly map: Buffer | null;
  /** Copies in flight on the addon's threads: the descriptor stays open until they finish. */
  pins: number;
  unregistered: boolean;
}

/** Longest region name and key accepted (the HTTP routes carry the name in the URL path). */
export const MAX_SHM_NAME_CHARS = 1024;

/**
 * Outputs up to this size are copied into a mapped region on the event loop: a pwrite on the
 * addon's threads costs two thread wake-ups, more than a memcpy of this much (at a few GB/s, tens
 * of µs). Larger outputs keep off the event loop.
 */
export const IN_PLACE_WRITE_MAX_BYTES = 256 * 1024;

const shmError = (message: string) => new ServeError('HLO_ERR_SHM_INVALID', message);

/**
 * Triton's system shared memory: clients register a POSIX shm object (key '/name', which Linux
 * backs with /dev/shm/name) and then point input and output tensors into it. Each object is
 * opened once, at registration, and its window mapped once through the addon: an input tensor is
 * a view of the mapping that execute() hands to PJRT as its host buffer (no 64 MB copy into a
 * fresh JS buffer, whose external-memory accounting forced a full GC per request). Outputs are
 * written with pwrite on the addon's threads (never on the event loop). Every access is
 * bounds-checked against the registered window and the object's current size and link count are
 * checked before it: an owner that truncates or unlinks the object while it is registered gets
 * HLO_ERR_SHM_INVALID, never a crash. An owner that truncates between that check and the copy
 * makes the copy read zeros (the addon's SIGBUS guard), and `assertIntact` after the execution
 * turns that into the same error (@hloserve/native's src/shm_io.cc).
 */
export class SharedMemoryRegistry {
  readonly #regions = new Map<string, Region>();
  readonly #root: string;

  constructor(root = '/dev/shm') {
    this.#root = root;
  }

  register(name: string, key: string, offset: number, byteSize: number): void {
    if (!name) throw shmError('shared memory region name must not be empty');
    if (name.length > MAX_SHM_NAME_CHARS || key.length > MAX_SHM_NAME_CHARS)
      throw shmError(`shared memory region name and key are limited to ${MAX_SHM_NAME_CHARS} characters`);
    if (!/^\/?[A-Za-z0-9._-]+$/.test(key) || key.replace(/^\//, '') === '.' || key.replace(/^\//, '') === '..') {
      throw shmError(`shared memory key ${quote(key)} is not a valid POSIX shm name ('/name')`);
    }
    if (!Number.isSafeInteger(offset) || offset < 0)
      throw shmError(`offset ${quote(offset)} must be a non-negative integer`);
    if (!Number.isSafeInteger(byteSize) || byteSize <= 0)
      throw shmError(`byte_size ${quote(byteSize)} must be a positive integer`);
    const fd = this.#open(name, key);
    const st = fstatSync(fd);
    if (!st.isFile()) {
      closeSync(fd);
      throw shmError(`shared memory key ${quote(key)} is not a regular file under ${this.#root}`);
    }
    const size = st.size;
    if (offset > size || byteSize > size - offset) {
      closeSync(fd);
      throw shmError(
        `shared memory region ${quote(name)}: offset ${offset} + byte_size ${byteSize} exceeds the object's ${size} bytes`,
      );
    }
    // Re-registering a name replaces it (Triton refuses; tritonclient users re-register after restarts).
    this.unregister(name);
    const map = mapSharedMemory(fd, offset, byteSize);
    this.#regions.set(name, { name, key, offset, byteSize, fd, map, pins: 0, unregistered: false });
  }

  /**
   * Opens the shm object as Triton's shm_open does: never through a symbolic link (O_NOFOLLOW), so
   * a link planted in /dev/shm cannot point inference outputs at another file; never blocking on a
   * FIFO (O_NONBLOCK); and only an object directly under the root (the key has no '/' inside).
   */
  #open(name: string, key: string): number {
    const path = join(this.#root, key.replace(/^\//, ''));
    let fd: number;
    try {
      fd = openSync(path, fsc.O_RDWR | fsc.O_NOFOLLOW | fsc.O_NONBLOCK);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw shmError(
        `unable to open shared memory region ${quote(name)} (key ${quote(key)}): ${code === 'ELOOP' ? 'the key is a symbolic link' : code}`,
      );
    }
    return fd;
  }

  /** Unregisters one region, or every region when `name` is empty. Unknown names are not an error. */
  unregister(name = ''): void {
    const names = name ? [name] : [...this.#regions.keys()];
    for (const n of names) {
      const r = this.#regions.get(n);
      if (!r) continue;
      this.#regions.delete(n);
      r.unregistered = true;
      // A copy still running on the addon's threads keeps the descriptor: closing it now could let
      // the number be reused by another open() and the copy land in the wrong file.
      if (r.pins === 0) closeSync(r.fd);
    }
  }

  #unpin(r: Region): void {
    if (--r.pins === 0 && r.unregistered) closeSync(r.fd);
  }

  status(name = ''): RegionStatus[] {
    if (!name) return [...this.#regions.values()].map(statusOf);
    const r = this.#regions.get(name);
    if (!r)
      throw new ServeError(
        'HLO_ERR_SHM_REGION_NOT_FOUND',
        `unable to find system shared memory region: ${quote(name)}`,
      );
    return [statusOf(r)];
  }

  get size(): number {
    return this.#regions.size;
  }

  #window(name: string, offset: number, byteSize: number): Region {
    const r = this.#regions.get(name);
    if (!r)
      throw new ServeError('HLO_ERR_SHM_REGION_UNKNOWN', `unable to find system shared memory region: ${quote(name)}`);
    if (!Number.isSafeInteger(offset) || offset < 0 || !Number.isSafeInteger(byteSize) || byteSize < 0) {
      throw shmError(`invalid shared memory offset ${offset} / byte size ${byteSize} for region ${quote(name)}`);
    }
    if (offset > r.byteSize || byteSize > r.byteSize - offset) {
      throw shmError(
        `shared memory access out of bounds: offset ${offset} + ${byteSize} bytes exceeds region ${quote(name)} of ${r.byteSize} bytes`,
      );
    }
    return r;
  }

  /**
   * Checks that a window lies inside a registered region, synchronously: requests are refused
   * before anything is queued or copied.
   */
  check(name: string, offset: number, byteSize: number): void {
    this.#window(name, offset, byteSize);
  }

  /**
   * `byteSize` bytes of a region: a view of its mapping (read in place; check it with
   * `assertIntact` once the execution that read it is done), or a copy when it is not mapped.
   */
  async read(name: string, offset: number, byteSize: number): Promise<Uint8Array> {
    const r = this.#window(name, offset, byteSize);
    if (byteSize === 0) return new Uint8Array(0);
    if (r.map) {
      this.#checkObject(r);
      return r.map.subarray(offset, offset + byteSize);
    }
    r.pins++;
    try {
      return await readSharedMemory(r.fd, r.offset + offset, byteSize, r.offset + r.byteSize);
    } catch (err) {
      throw changed(name, err);
    } finally {
      this.#unpin(r);
    }
  }

  /**
   * Writes `data` into a region; `capacity` is the byte size the client reserved for it. Into the
   * mapping on this thread when it is mapped and `data` is at most IN_PLACE_WRITE_MAX_BYTES; else
   * with pwrite on the addon's threads.
   */
  async write(name: string, offset: number, capacity: number, data: Uint8Array): Promise<void> {
    const r = this.#window(name, offset, capacity);
    if (data.byteLength > capacity) {
      throw shmError(
        `output of ${data.byteLength} bytes does not fit the ${capacity} bytes reserved in shared memory region ${quote(name)}`,
      );
    }
    if (data.byteLength === 0) return;
    if (r.map && data.byteLength <= IN_PLACE_WRITE_MAX_BYTES) {
      this.#checkObject(r);
      r.map.set(data, offset);
      // Truncated under the copy: the SIGBUS guard put anonymous pages there and the bytes are lost.
      if (sharedMemoryFaulted(r.map)) throw faultedError(name, 'written');
      return;
    }
    r.pins++;
    try {
      await writeSharedMemory(r.fd, r.offset + offset, data, r.offset + r.byteSize);
    } catch (err) {
      throw changed(name, err);
    } finally {
      this.#unpin(r);
    }
  }

  /** The region's object must still be linked, as long as the registered window, and unfaulted. */
  #checkObject(r: Region): void {
    let st;
    try {
      st = fstatSync(r.fd);
    } catch (err) {
      throw shmError(`shared memory region ${quote(r.name)}: fstat failed: ${(err as Error).message}`);
    }
    if (st.nlink === 0)
      throw shmError(`shared memory region ${quote(r.name)}: the shared memory object was unlinked by its owner`);
    const need = r.offset + r.byteSize;
    if (st.size < need)
      throw shmError(
        `shared memory region ${quote(r.name)}: the shared memory object was truncated by its owner to ${st.size} bytes (the region needs ${need})`,
      );
    if (r.map && sharedMemoryFaulted(r.map)) throw faultedError(r.name);
  }

  /**
   * Throws when the mapping that `view` (from `read`) lies in was truncated under a copy: the copy
   * read zeros, so the result computed from it must not be returned.
   */
  assertIntact(name: string, view: Uint8Array): void {
    if (view.byteLength > 0 && sharedMemoryFaulted(view)) throw faultedError(name);
  }

  close(): void {
    this.unregister('');
  }
}

function faultedError(name: string, access: 'read' | 'written' = 'read'): ServeError {
  return shmError(
    `shared memory region ${quote(name)}: the shared memory object was truncated by its owner while it was ${access}; register it again`,
  );
}

function statusOf(r: Region): RegionStatus {
  return { name: r.name, key: r.key, offset: r.offset, byteSize: r.byteSize };
}

/** The owner truncated or unlinked the object: the request is at fault, the server is not. */
function changed(name: string, err: unknown): unknown {
  if (err instanceof SharedMemoryError) return shmError(`shared memory region ${quote(name)}: ${err.message}`);
  return err;
}
