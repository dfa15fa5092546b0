import { threadAddon } from './thread-addon.js';

/**
 * Puts the calling thread (and only it) at SCHED_IDLE: it then runs only on a core that no
 * normal thread of any process wants. For a JS worker thread that does work nobody waits on at
 * low latency (the HTTP JSON parser). False where that is not possible (not Linux, the small
 * hloserve_thread addon missing, or the system refused), so the caller can fall back to nice.
 * There is no way back for an unprivileged thread.
 */
export function idleThisThread(): boolean {
  if (process.platform !== 'linux') return false;
  try {
    return threadAddon()?.idleThisThread() ?? false;
  } catch {
    return false;
  }
}
