import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The small hloserve_thread addon: what a JS worker thread sets for itself (src/thread_priority.cc). */
export interface ThreadAddon {
  idleThisThread(): boolean;
  guardBuffers(limitBytes: number, threadId: number): boolean;
  watchBufferGuards(onFired: (threadId: number) => void): boolean;
  releaseBufferGuard(threadId: number): void;
  buffersGuardFired(threadId: number): boolean;
  setTimerSlack(ns: number): boolean;
  timerSlack(): number;
}

let addon: ThreadAddon | null | undefined;

/** The addon, loaded once per thread; null where it is missing (not built, not Linux). */
export function threadAddon(): ThreadAddon | null {
  if (addon !== undefined) return addon;
  try {
    const here = dirname(fileURLToPath(import.meta.url));
    addon = createRequire(import.meta.url)(
      join(here, '..', '..', 'build', 'Release', 'hloserve_thread.node'),
    ) as ThreadAddon;
  } catch {
    addon = null;
  }
  return addon;
}
