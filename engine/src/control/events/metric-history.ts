/**
 * The short metric history: once a second, per model, requests/s (from the served counter),
 * queue depth, resident bytes, loads and evictions. Each sample is streamed on the feed's
 * `metrics` topic (so ticks are aggregated to 1 Hz) and stored: seconds for 15 minutes, minute
 * averages for a day. p50 / p99 come from the model's latency histogram: the requests answered
 * since the previous sample (a second's row), or within the minute (a minute's row); null when
 * none were.
 */
import type { ModelPort } from '../api/model-port.js';
import type { Topic } from '../feed/topic.js';
import type { MetricSampleInsert, Store } from '../../state/store.js';
import type { Logger } from '../../log.js';
import { LATENCY_BUCKETS, percentilesMs } from '../../observability/latency-histogram.js';

export const SECOND_RETENTION_MS = 15 * 60 * 1000;
export const MINUTE_RETENTION_MS = 24 * 3600 * 1000;
const FLUSH_EVERY = 5;

export class MetricHistory {
  readonly #last = new Map<string, { at: number; served: number }>();
  /** Per model: the latency counts at the previous sample, and what arrived within this minute. */
  readonly #latency = new Map<string, { prev: Uint32Array; minute: Uint32Array }>();
  readonly #delta = new Uint32Array(LATENCY_BUCKETS);
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
    const models = this.port.models();
    if (this.#latency.size > models.length) {
      const names = new Set(models.map((m) => m.name));
      for (const name of this.#latency.keys()) if (!names.has(name)) this.#latency.delete(name);
    }
    for (const m of models) {
      const served = m.stats?.requestsServed ?? 0;
      const prev = this.#last.get(m.name);
      this.#last.set(m.name, { at, served });
      const dt = prev ? (at - prev.at) / 1000 : 0;
      const [p50Ms, p99Ms] = this.#percentiles(m.name);
      samples.push({
        model: m.name,
        resolution: 's',
        at,
        requestsPerSecond: prev && dt > 0 ? Math.max(0, served - prev.served) / dt : 0,
        p50Ms,
        p99Ms,
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
      const minute = averageByModel(this.#minute, this.#minuteStart).map((r) => {
        const l = this.#latency.get(r.model);
        if (!l) return r;
        const [p50Ms, p99Ms] = percentilesMs(l.minute, [0.5, 0.99]);
        l.minute.fill(0);
        return { ...r, p50Ms: p50Ms ?? null, p99Ms: p99Ms ?? null };
      });
      this.#pending.push(...minute);
      this.#minute = [];
      this.#minuteStart = at;
    }
    if (++this.#ticks % FLUSH_EVERY === 0) void this.flush(at);
  }

  /** p50 and p99 of the requests answered since the last sample; adds them to the minute's counts. */
  #percentiles(model: string): [number | null, number | null] {
    const counts = this.port.latency(model)?.counts;
    if (!counts) return [null, null];
    let l = this.#latency.get(model);
    if (!l) {
      // The first sample of a model has no previous counts: it counts what came before it.
      l = { prev: new Uint32Array(LATENCY_BUCKETS), minute: new Uint32Array(LATENCY_BUCKETS) };
      this.#latency.set(model, l);
    }
    // A slot made again (unload, then load) counts from zero: then everything it holds is new.
    let restarted = false;
    for (let i = 0; i < LATENCY_BUCKETS && !restarted; i++) restarted = counts[i]! < l.prev[i]!;
    const d = this.#delta;
    for (let i = 0; i < LATENCY_BUCKETS; i++) {
      d[i] = restarted ? counts[i]! : counts[i]! - l.prev[i]!;
      l.minute[i] = l.minute[i]! + d[i]!;
    }
    l.prev.set(counts);
    const [p50, p99] = percentilesMs(d, [0.5, 0.99]);
    return [p50 ?? null, p99 ?? null];
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
