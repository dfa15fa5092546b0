/**
 * Restart delay after the n-th consecutive crash: 250 ms doubling to 30 s. A worker that stayed up
 * for `resetAfterMs` starts counting from zero again, so a rare crash restarts at once.
 */
export const RESTART_RESET_AFTER_MS = 60_000;

export function restartDelayMs(consecutiveRestarts: number): number {
  if (consecutiveRestarts <= 0) return 0;
  return Math.min(250 * 2 ** (consecutiveRestarts - 1), 30_000);
}
