/**
 * How often live data may reach this browser's screens: every second (the default), every 2 s or
 * every 5 s, chosen in Settings. Kept in localStorage, so every tab of the browser follows one
 * choice (another tab's arrives as a `storage` event). A shown page's browser CPU is almost all
 * its updates, one frame each (docs/console.md, "Live updates"): fewer updates, less CPU, on the
 * operator's machine or on an appliance that serves and shows the console on the same cores.
 */
import type { WatchedStorage } from './token-store.js';

export const LIVE_INTERVAL_KEY = 'hloserve.liveIntervalMs';
export const LIVE_INTERVALS_MS = [1000, 2000, 5000] as const;
export type LiveIntervalMs = (typeof LIVE_INTERVALS_MS)[number];
export const DEFAULT_LIVE_INTERVAL_MS: LiveIntervalMs = 1000;

/** A stored value as an interval offered; anything else (none, edited by hand) is the default. */
export function parseLiveInterval(v: string | null | undefined): LiveIntervalMs {
  return LIVE_INTERVALS_MS.find((ms) => String(ms) === v) ?? DEFAULT_LIVE_INTERVAL_MS;
}

export interface LiveIntervalStore {
  get(): LiveIntervalMs;
  set(ms: LiveIntervalMs): void;
  subscribe(listener: (ms: LiveIntervalMs) => void): () => void;
}

export function createLiveIntervalStore({ storage, watch }: WatchedStorage): LiveIntervalStore {
  const listeners = new Set<(ms: LiveIntervalMs) => void>();
  const read = () => parseLiveInterval(storage()?.getItem(LIVE_INTERVAL_KEY));
  let held = read();
  const tell = () => {
    for (const l of [...listeners]) l(held);
  };
  watch?.((key) => {
    if (key !== null && key !== LIVE_INTERVAL_KEY) return;
    const was = held;
    held = read();
    if (held !== was) tell();
  });
  return {
    get: () => held,
    set(ms) {
      storage()?.setItem(LIVE_INTERVAL_KEY, String(ms));
      if (ms === held) return;
      held = ms;
      tell();
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
