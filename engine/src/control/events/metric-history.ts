/**
 * The short metric history: once a second, per model, requests/s (from the served counter),
 * queue depth, resident bytes, loads and evictions. Each sample is streamed on the feed's
 * `metrics` topic (so ticks are aggregated to 1 Hz) and stored: seconds for 15 minutes, minute
 * averages for a day. Latency percentiles are not recorded yet (null): the Worker keeps no
 * per-model latency distribution the port can read.
 */
import type { ModelPort } from '../api/model-port.js';
import type { Topic } from '../feed/topic.js';
import type { MetricSampleInsert, Store } from '../../state/store.js';
import type { Logger } from '../../log.js';

export const SECOND_RETENTION_MS = 15 * 60 * 1000;
export const MINUTE_RETENTION_MS = 24 * 3600 * 1000;
const FLUSH_EVERY = 5;

export class MetricHistory {
  readonly #last = new Map<string, { at: number; served: number }>();
  #pending: MetricSampleInsert[] = [];
  #minute: MetricSampleInsert[] = [];
  #minuteStart = 0;
  #ticks = 0;
  readonly #timer: NodeJS.Timeout | null;
  #writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: Store,
    private readonly port: ModelPort,
    private readonly topic: Topic,
    private readonly log: Logger,
    intervalMs = 1000,
  ) {
    this.#timer = intervalMs > 0 ? setInterval(() => this.tick(Date.now()), intervalMs) : null;
    this.#timer?.unref();
  }

  tick(at: number): void {
    const samples: MetricSampleInsert[] = [];
    for (const m of this.port.models()) {
      const served = m.stats?.requestsServed ?? 0;
      const prev = this.#last.get(m.name);
      this.#last.set(m.name, { at, served });
      const dt = prev ? (at - prev.at) / 1000 : 0;
      samples.push({
        model: m.name,
        resolution: 's',
        at,
        requestsPerSecond: prev && dt > 0 ? Math.max(0, served - prev.served) / dt : 0,
        p50Ms: null,
        p99Ms: null,
        queueDepth: m.queue?.depth ?? 0,
        residentBytes: m.residency?.deviceResident ? m.residency.weightBytes : 0,
        loads: m.residency?.loads ?? 0,
        evictions: m.residency?.evictions ?? 0,
      });
    }
    this.topic.append({ at, models: Object.fromEntries(samples.map(({ model, resolution: _r, ...s }) => [model, s])) });
    this.#pending.push(...samples);
    if (this.#minuteStart === 0) this.#minuteStart = at;
    this.#minute.push(...samples);
    if (at - this.#minuteStart >= 60_000) {
      this.#pending.push(...averageByModel(this.#minute, this.#minuteStart));
      this.#minute = [];
      this.#minuteStart = at;
    }
    if (++this.#ticks % FLUSH_EVERY === 0) void this.flush(at);
  }

  flush(at = Date.now()): Promise<void> {
    const rows = this.#pending;
    this.#pending = [];
    this.#writing = this.#writing.then(async () => {
      try {
        await this.store.appendMetricSamples(rows);
        await this.store.pruneMetricSamples('s', at - SECOND_RETENTION_MS);
        await this.store.pruneMetricSamples('m', at - MINUTE_RETENTION_MS);
      } catch (err) {
        this.log.warn('metric samples not stored', { error: (err as Error).message });
      }
    });
    return this.#writing;
  }

  close(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    return this.flush();
  }
}

function averageByModel(rows: readonly MetricSampleInsert[], at: number): MetricSampleInsert[] {
  const by = new Map<string, MetricSampleInsert[]>();
  for (const r of rows) by.set(r.model, [...(by.get(r.model) ?? []), r]);
  return [...by].map(([model, rs]) => {
    const last = rs[rs.length - 1]!;
    return {
      model,
      resolution: 'm',
      at,
      requestsPerSecond: rs.reduce((s, r) => s + r.requestsPerSecond, 0) / rs.length,
      p50Ms: null,
      p99Ms: null,
      queueDepth: Math.max(...rs.map((r) => r.queueDepth)),
      residentBytes: last.residentBytes,
      loads: last.loads,
      evictions: last.evictions,
    };
  });
}
