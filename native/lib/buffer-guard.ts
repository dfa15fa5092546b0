import { threadId } from 'node:worker_threads';
import { threadAddon } from './thread-addon.js';

/**
 * A bound on the ArrayBuffers (typed arrays, Buffers) a JS worker thread's isolate holds. A
 * worker's resourceLimits bound only its JS heap; these live outside it. The guarded thread calls
 * guardThreadBuffers(); its owner, on the main thread, registers with onBuffersGuardFired() what
 * to do when it passes the limit. At the first garbage collection past it (V8 collects as external
 * memory grows) the thread is held where it is, the owner's handler runs on the main thread and
 * must terminate the worker (Worker.terminate(): Node's own, safe with the thread's pending I/O)
 * and call releaseBuffersGuard() so that the thread can leave the hold and stop. Without the
 * hloserve_thread addon nothing is guarded.
 */

/** Guards the calling thread; false where the addon is missing (the thread then runs unguarded). */
export function guardThreadBuffers(limitBytes: number): boolean {
  try {
    return threadAddon()?.guardBuffers(limitBytes, threadId) ?? false;
  } catch {
    return false;
  }
}

const handlers = new Map<number, () => void>();
let watching = false;

/**
 * Calls `onFired` on this (the owner's) thread when the guarded thread `id` passes its limit.
 * Registered before the thread can run a hook; unregister with the returned function.
 */
export function onBuffersGuardFired(id: number, onFired: () => void): () => void {
  const addon = threadAddon();
  if (addon === null) return () => undefined;
  if (!watching) watching = addon.watchBufferGuards((fired) => handlers.get(fired)?.());
  handlers.set(id, onFired);
  return () => handlers.delete(id);
}

/** The owner has terminated thread `id`: it may leave its hold. */
export function releaseBuffersGuard(id: number): void {
  threadAddon()?.releaseBufferGuard(id);
}

/** True (once) when the guard of the thread `id` (its Worker's threadId, read before it exited) fired. */
export function buffersGuardFired(id: number): boolean {
  try {
    return threadAddon()?.buffersGuardFired(id) ?? false;
  } catch {
    return false;
  }
}
