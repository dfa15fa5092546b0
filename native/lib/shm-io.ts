/**
 * Copies between an open system shared-memory object and host memory on the addon's threads (see
 * src/shm_io.cc for why this copies through the descriptor instead of mapping the object).
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
