/**
 * The short metric history: once a second, per model, requests/s (from the served counter),
 * queue depth, resident bytes, loads and evictions. Each sample is streamed on the feed's
 * `metrics` topic (so ticks are aggregated to 1 Hz) and stored: seconds for 15 minutes, minute
 * averages for a day. p50 / p99 come from the model's latency histogram: the requests answered
 * since the previous sample (a second's row), or within the minute (a minute's row); null when
 * none were.
 *
 * A row is stored only when a model's sample differs from the last one stored for it, and at
 * least once every KEEPALIVE_SAMPLES samples; reads fill the samples in between from the row
 * before them. A repository of many models is mostly idle, and a row per model per second cost a
 * thousand models 5,000 rows every five seconds: a statement past SQLite's limit on parameters
 * (none was stored) whose building held the serving thread for a quarter of a second. A gap longer
 * than Thinning.toleranceMs is a time nothing sampled (the server was stopped) and stays a gap.
 */
import type { ModelPort } from '../api/model-port.js';
import type { Topic } from '../feed/topic.js';
import type { MetricSampleInsert, MetricSampleRow, Store } from '../../state/store.js';
import type { Logger } from '../../log.js';
import { LATENCY_BUCKETS, percentilesMs } from '../../observability/latency-histogram.js';

export const SECOND_RETENTION_MS = 15 * 60 * 1000;
export const MINUTE_RETENTION_MS = 24 * 3600 * 1000;
/** A model's unchanged sample is still stored once in this many (a second's or a minute's). */
export const KEEPALIVE_SAMPLES = 60;
const MINUTE_MS = 60_000;
const FLUSH_EVERY = 5;
/** Ticks between two prunes: the prune's DELETE reads the whole table. */
const PRUNE_EVERY = 60;

export type MetricResolution = 's' | 'm';
/** A sample as the control API answers it. */
export type MetricSample = Omit<MetricSampleInsert, 'model' | 'resolution'>;
type Values = Omit<MetricSample, 'at'>;

/** Per model: the last row stored (to store only what changed) and when the model was last sampled. */
class Thinning {
  readonly #stored = new Map<string, MetricSample>();
  readonly #seen = new Map<string, number>();

  constructor(readonly stepMs: number) {}

  get keepaliveMs(): number {
    return this.stepMs * KEEPALIVE_SAMPLES;
  }

  /**
   * The longest gap between two rows that reads fill: a keepalive, and ten periods for a late
   * timer. A stop shorter than that is filled as if sampled.
   */
  get toleranceMs(): number {
    return this.stepMs * (KEEPALIVE_SAMPLES + 10);
  }

  /** Records that `model` was sampled; true when the sample is to be stored. */
  keep(model: string, sample: MetricSample): boolean {
    this.#seen.set(model, sample.at);
    const last = this.#stored.get(model);
    if (last !== undefined && sample.at - last.at < this.keepaliveMs && sameValues(last, sample)) return false;
    this.#stored.set(model, sample);
    return true;
  }

  lastSampled(model: string): number | undefined {
    return this.#seen.get(model);
  }

  forgetAllBut(names: ReadonlySet<string>): void {
    for (const name of this.#seen.keys()) {
      if (names.has(name)) continue;
      this.#seen.delete(name);
      this.#stored.delete(name);
    }
  }
}

const VALUE_KEYS = [
  'requestsPerSecond',
  'p50Ms',
  'p99Ms',
  'queueDepth',
  'residentBytes',
  'loads',
  'evictions',
] as const satisfies readonly (keyof Values)[];

function sameValues(a: Values, b: Values): boolean {
  for (const k of VALUE_KEYS) if (a[k] !== b[k]) return false;
  return true;
}

/** A minute's samples of one model, summed as they come. */
interface MinuteSum {
  n: number;
  requestsPerSecond: number;
  queueDepth: number;
  last: Values;
}

export class MetricHistory {
  readonly #last = new Map<string, { at: number; served: number }>();
  /** Per model: the latency counts at the previous sample, and what arrived within this minute. */
  readonly #latency = new Map<
    string,
    { source: Uint32Array; prevTotal: number; prev: Uint32Array; minute: Uint32Array }
  >();
  readonly #delta = new Uint32Array(LATENCY_BUCKETS);
  readonly #thinning: Record<MetricResolution, Thinning>;
  #pending: MetricSampleInsert[] = [];
  #minute = new Map<string, MinuteSum>();
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
    this.#thinning = { s: new Thinning(intervalMs > 0 ? intervalMs : 1000), m: new Thinning(MINUTE_MS) };
    this.#timer = intervalMs > 0 ? setInterval(() => this.tick(Date.now()), intervalMs) : null;
    this.#timer?.unref();
  }

  tick(at: number): void {
    const samples: Record<string, MetricSample> = {};
    const models = this.port.loads();
    if (this.#last.size > models.length) this.#forgetAllBut(new Set(models.map((m) => m.name)));
    for (const m of models) {
      const served = m.requestsServed;
      const prev = this.#last.get(m.name);
      this.#last.set(m.name, { at, served });
      const dt = prev ? (at - prev.at) / 1000 : 0;
      const [p50Ms, p99Ms] = this.#percentiles(m.name);
      const sample: MetricSample = {
        at,
        requestsPerSecond: prev && dt > 0 ? Math.max(0, served - prev.served) / dt : 0,
        p50Ms,
        p99Ms,
        queueDepth: m.queueDepth,
        residentBytes: m.residentBytes,
        loads: m.loads,
        evictions: m.evictions,
      };
      samples[m.name] = sample;
      if (this.#thinning.s.keep(m.name, sample)) this.#pending.push({ model: m.name, resolution: 's', ...sample });
      const sum = this.#minute.get(m.name);
      if (sum === undefined) {
        this.#minute.set(m.name, {
          n: 1,
          requestsPerSecond: sample.requestsPerSecond,
          queueDepth: sample.queueDepth,
          last: sample,
        });
      } else {
        sum.n++;
        sum.requestsPerSecond += sample.requestsPerSecond;
        sum.queueDepth = Math.max(sum.queueDepth, sample.queueDepth);
        sum.last = sample;
      }
    }
    this.topic.append({ at, models: samples });
    if (this.#minuteStart === 0) this.#minuteStart = at;
    if (at - this.#minuteStart >= MINUTE_MS) this.#closeMinute(at);
    const ticks = ++this.#ticks;
    if (ticks % FLUSH_EVERY === 0) void this.flush(at, ticks % PRUNE_EVERY === 0);
  }

  #closeMinute(at: number): void {
    const minuteAt = this.#minuteStart;
    for (const [model, sum] of this.#minute) {
      const l = this.#latency.get(model);
      let p: (number | null)[] = [null, null];
      if (l !== undefined) {
        p = percentilesMs(l.minute, [0.5, 0.99]);
        l.minute.fill(0);
      }
      const row: MetricSample = {
        ...sum.last,
        at: minuteAt,
        requestsPerSecond: sum.requestsPerSecond / sum.n,
        queueDepth: sum.queueDepth,
        p50Ms: p[0] ?? null,
        p99Ms: p[1] ?? null,
      };
      if (this.#thinning.m.keep(model, row)) this.#pending.push({ model, resolution: 'm', ...row });
    }
    this.#minute = new Map();
    this.#minuteStart = at;
  }

  #forgetAllBut(names: ReadonlySet<string>): void {
    for (const name of this.#last.keys()) if (!names.has(name)) this.#last.delete(name);
    for (const name of this.#latency.keys()) if (!names.has(name)) this.#latency.delete(name);
    this.#thinning.s.forgetAllBut(names);
    this.#thinning.m.forgetAllBut(names);
  }

  /** p50 and p99 of the requests answered since the last sample; adds them to the minute's counts. */
  #percentiles(model: string): [number | null, number | null] {
    const latency = this.port.latency(model);
    if (!latency) return [null, null];
    const counts = latency.counts;
    let l = this.#latency.get(model);
    // A slot made again (unload, then load) has counts of its own, from zero: all of them are new.
    if (l === undefined || l.source !== counts) {
      // The first sample of a model has no previous counts: it counts what came before it.
      l = {
        source: counts,
        prevTotal: 0,
        prev: new Uint32Array(LATENCY_BUCKETS),
        minute: l?.minute ?? new Uint32Array(LATENCY_BUCKETS),
      };
      this.#latency.set(model, l);
    }
    // Most models of a large repository answered nothing this second.
    if (latency.total === l.prevTotal) return [null, null];
    l.prevTotal = latency.total;
    const d = this.#delta;
    for (let i = 0; i < LATENCY_BUCKETS; i++) {
      d[i] = counts[i]! - l.prev[i]!;
      l.minute[i] = l.minute[i]! + d[i]!;
    }
    l.prev.set(counts);
    const [p50, p99] = percentilesMs(d, [0.5, 0.99]);
    return [p50 ?? null, p99 ?? null];
  }

  /**
   * The model's samples at `resolution` from `sinceAt` on, one per sample period while it was
   * sampled: the stored rows, those not yet written, and between them the samples that were not
   * stored because nothing had changed.
   */
  async samples(model: string, resolution: MetricResolution, sinceAt: number): Promise<MetricSample[]> {
    const thinning = this.#thinning[resolution];
    const from = Math.max(0, sinceAt - thinning.toleranceMs);
    // Rows not yet written, taken first: a flush that starts meanwhile writes them, and the read
    // may then see them too (dropped below as the same sample).
    const unwritten = this.#pending.filter((r) => r.model === model && r.resolution === resolution && r.at >= from);
    await this.#writing;
    const rows = (await this.store.listMetricSamples(model, resolution, from)).map(sampleOf);
    for (const r of unwritten) rows.push(sampleOf(r));
    rows.sort((a, b) => a.at - b.at);
    const distinct = rows.filter((r, i) => i === 0 || r.at !== rows[i - 1]!.at);
    return fillSamples(distinct, thinning.stepMs, thinning.toleranceMs, thinning.lastSampled(model)).filter(
      (r) => r.at >= sinceAt,
    );
  }

  flush(at = Date.now(), prune = true): Promise<void> {
    const rows = this.#pending;
    this.#pending = [];
    this.#writing = this.#writing.then(async () => {
      try {
        await this.store.appendMetricSamples(rows);
        if (prune) {
          // One row before each window is kept: the one its first samples are filled from.
          await this.store.pruneMetricSamples('s', at - SECOND_RETENTION_MS - this.#thinning.s.toleranceMs);
          await this.store.pruneMetricSamples('m', at - MINUTE_RETENTION_MS - this.#thinning.m.toleranceMs);
        }
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

function sampleOf(r: MetricSampleInsert | MetricSampleRow): MetricSample {
  return {
    at: r.at,
    requestsPerSecond: r.requestsPerSecond,
    p50Ms: r.p50Ms ?? null,
    p99Ms: r.p99Ms ?? null,
    queueDepth: r.queueDepth,
    residentBytes: r.residentBytes,
    loads: r.loads,
    evictions: r.evictions,
  };
}

/**
 * Rows in time order, with the samples that were not stored put back: after each row, a copy every
 * `stepMs` up to the next row (or, after the last, up to `untilAt`, the model's last sample),
 * unless that gap is longer than `toleranceMs`, when nothing sampled the model.
 */
export function fillSamples(
  rows: readonly MetricSample[],
  stepMs: number,
  toleranceMs: number,
  untilAt: number | undefined,
): MetricSample[] {
  const out: MetricSample[] = [];
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i]!;
    out.push(r);
    const next = rows[i + 1];
    const end = next?.at ?? untilAt;
    if (end === undefined || end - r.at > toleranceMs) continue;
    // Before the next row (which is itself a sample), or up to and including the last sample.
    const stop = next === undefined ? end + stepMs / 2 : end - stepMs / 2;
    for (let at = r.at + stepMs; at < stop; at += stepMs) out.push({ ...r, at });
  }
  return out;
}
