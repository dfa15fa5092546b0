/**
 * A per-minute rate from a cumulative counter sampled over time (failed device calls, deadline
 * misses): the increase over the last minute held, like the loads and evictions rates.
 */
export interface CounterPoint {
  readonly t: number;
  readonly v: number;
}

/** Appends a sample (one per instant) and drops those older than the window needs. */
export function pushPoint(history: readonly CounterPoint[], p: CounterPoint, windowMs = 60_000): CounterPoint[] {
  const last = history[history.length - 1];
  if (last && last.t >= p.t) return history as CounterPoint[];
  const kept = history.filter((h) => h.t >= p.t - windowMs);
  kept.push(p);
  return kept;
}

/**
 * The counter's increase per minute over the samples held; null under 15 s of history (mostly
 * noise). A counter that went down (an engine restart) counts from zero.
 */
export function perMinute(history: readonly CounterPoint[]): number | null {
  const first = history[0];
  const last = history[history.length - 1];
  if (!first || !last) return null;
  const minutes = (last.t - first.t) / 60_000;
  if (minutes < 0.25) return null;
  let increase = 0;
  for (let i = 1; i < history.length; i++) {
    const d = history[i]!.v - history[i - 1]!.v;
    increase += d >= 0 ? d : history[i]!.v;
  }
  return increase / minutes;
}
