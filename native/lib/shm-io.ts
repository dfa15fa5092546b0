/**
 * Copies between an open system shared-memory object and host memory on the addon's threads (see
 * src/shm_io.cc); or maps a registered window once and reads it in place.
 * `minSize` is the end of the registered window: the object must still be linked and at least that
 * long, or the promise rejects with a SharedMemoryError and nothing is read or written.
 */
import { binding } from './binding.js';
import { SharedMemoryError } from './errors.js';

function typed(err: unknown): unknown {
  if (err instanceof Error && err.name === 'SharedMemoryError') return new SharedMemoryError(err.message);
  return err;
}

export async function readSharedMemory(fd: number, position: number, length: number, minSize: number): Promise<Buffer> {
  try {
    return await binding().shmRead(fd, position, length, minSize);
  } catch (err) {
    throw typed(err);
  }
}

export async function writeSharedMemory(
  fd: number,
  position: number,
  data: ArrayBufferView,
  minSize: number,
): Promise<void> {
  try {
    await binding().shmWrite(fd, position, data, minSize);
  } catch (err) {
    throw typed(err);
  }
}

/**
 * Maps the registered window [offset, offset + length) of an open shm object, once, as a Buffer
 * whose views can be read in place and handed to execute() as host data (no copy into a fresh
 * ArrayBuffer per request). The mapping is released when the Buffer and all its views are
 * collected. null when the addon has no slot left or mmap refuses: the caller copies instead.
 * Pages that the owner truncates away while they are read turn into zeros instead of a SIGBUS
 * crash, and `sharedMemoryFaulted` then says so (src/shm_io.cc).
 */
export function mapSharedMemory(fd: number, offset: number, length: number): Buffer | null {
  return binding().shmMap(fd, offset, length);
}

/** Whether the mapping holding `view` was truncated under a read and now holds zeros. */
export function sharedMemoryFaulted(view: ArrayBufferView): boolean {
  return binding().shmFaulted(view);
}
