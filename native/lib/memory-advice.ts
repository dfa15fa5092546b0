import { binding } from './binding.js';

/** Below this a buffer may come from malloc's heap, whose pages are shared and already touched. */
export const HUGE_PAGE_ADVICE_MIN_BYTES = 64 * 2 ** 20;

/**
 * Asks for transparent huge pages behind a large buffer that is about to be filled for the first
 * time (a weights segment before it is read): a fault per 4 KiB page made reading a 2.7 GB weights
 * file take twice as long on a VM. Only buffers of HUGE_PAGE_ADVICE_MIN_BYTES or more, which glibc
 * always maps on their own, so that the advice never reaches the heap. False where not applied (a
 * smaller buffer, not Linux, a refusal); the buffer works the same either way.
 */
export function adviseHugePages(view: Uint8Array): boolean {
  if (view.byteLength < HUGE_PAGE_ADVICE_MIN_BYTES) return false;
  try {
    return binding().adviseHugePages(view);
  } catch {
    return false;
  }
}
