/**
 * A repack on the measured spread. The periodic repack comes after a fixed amount of fleet
 * compute; between repacks only the weights of split models move, so a worker whose load is held
 * in whole models (or a group of workers no split model joins to the rest) stays as far off even
 * as the last packing left it until the period is over. This watches what the workers measured:
 * over each span of fleet device time it takes the spread (max / mean device time over the
 * workers live throughout the span) and asks for a repack when it is above the threshold, no
 * sooner than a cooldown after the last repack of any kind, so a repack's own effect (a moved
 * model's first loads, the feedback's next period) is measured before another is made.
 */
import type { WorkerWindow } from './worker-feedback.js';

export interface SpreadTriggerSettings {
  /** Spread above 1 + threshold asks for a repack; 0 or less turns the trigger off. */
  readonly threshold: number;
  /** Fleet device-seconds a spread is measured over. */
  readonly spanComputeSeconds: number;
  /** Fleet device-seconds after any repack before the spread may trigger another. */
  readonly cooldownComputeSeconds: number;
}

export const DEFAULT_SPREAD_TRIGGER: SpreadTriggerSettings = {
  threshold: 0.05,
  spanComputeSeconds: 10,
  cooldownComputeSeconds: 20,
};

export class SpreadTrigger {
  private span = new Map<string, number>();
  private spanTotal = 0;
  /** Workers absent from some window of the span (down, restarted): not compared. */
  private gone = new Set<string>();
  private sinceRepack = 0;
  /** The spread of the last complete span (1 before any), and its device-seconds per worker. */
  lastSpread = 1;
  lastLoads: ReadonlyMap<string, number> = new Map();
  /** Spans whose spread asked for a repack. */
  fired = 0;

  constructor(private readonly settings: SpreadTriggerSettings) {}

  /** A repack happened (any trigger): the cooldown starts again. */
  repacked(): void {
    this.sinceRepack = 0;
  }

  /**
   * Folds in one poll window of `workers`; returns true when a span has closed above the threshold
   * and the cooldown is over.
   */
  observe(window: WorkerWindow, workers: readonly string[]): boolean {
    let total = 0;
    for (const w of workers) {
      const models = window.get(w);
      if (!models) {
        this.gone.add(w);
        continue;
      }
      let d = 0;
      for (const x of models.values()) d += x;
      this.span.set(w, (this.span.get(w) ?? 0) + d);
      total += d;
    }
    this.spanTotal += total;
    this.sinceRepack += total;
    if (this.spanTotal < this.settings.spanComputeSeconds) return false;
    const live = workers.filter((w) => !this.gone.has(w) && this.span.has(w));
    const loads = live.map((w) => this.span.get(w)!);
    this.lastLoads = new Map(live.map((w) => [w, this.span.get(w)!]));
    this.span = new Map();
    this.spanTotal = 0;
    this.gone = new Set();
    if (loads.length < 2) return false;
    const mean = loads.reduce((a, b) => a + b, 0) / loads.length;
    if (!(mean > 0)) return false;
    this.lastSpread = Math.max(...loads) / mean;
    const s = this.settings;
    if (!(s.threshold > 0) || this.lastSpread <= 1 + s.threshold || this.sinceRepack < s.cooldownComputeSeconds)
      return false;
    this.fired++;
    return true;
  }
}
