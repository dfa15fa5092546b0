/**
 * The short metric history: once a second, per model, requests/s (from the served counter),
 * queue depth, resident bytes, loads and evictions. Each tick is streamed on the feed's `metrics`
 * topic (the samples that changed since the tick before, and the totals over every model: summed
 * rates and counters, the slowest model's p50 and p99) and stored: seconds for 15 minutes, minute
 * averages for a day. p50 / p99 come from the model's latency histogram: the requests answered
 * since the previous sample (a second's row), or within the minute (a minute's row); null when
 * none were.
 *
 * A row is stored only when a model's sample differs from the last one stored for it, and at
 * least once every KEEPALIVE_SAMPLES samples; reads fill the samples in between from the row
 * before them. A repository of many models is mostly idle, and a row per model per second cost a
 * thousand models 5,000 rows every five seconds: a statement past SQLite's limit on parameters
 * (none was stored) whose building held the serving thread for a quarter of a second. A gap longer
 * than Resolution.toleranceMs is a time nothing sampled (the server was stopped) and stays a gap.
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

/** How one resolution's rows are thinned: a row when a sample changed, or a keepalive. */
class Resolution {
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

  /** Whether `sample` is to be stored after `last`, the last row stored. */
  keeps(last: MetricSample | undefined, sample: MetricSample): boolean {
    return last === undefined || sample.at - last.at >= this.keepaliveMs || !sameValues(last, sample);
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

/** What the history holds of one model between its samples: one record, forgotten at once. */
interface ModelSeries {
  /** The previous sample's time and served count (requests/s is their difference). */
  at: number;
  served: number;
  /** The latency counts seen at the previous sample, and those that arrived within this minute. */
  latency: { source: Uint32Array; prevTotal: number; prev: Uint32Array; minute: Uint32Array } | null;
  minute: MinuteSum | null;
  /** The last row stored per resolution: a row is stored only when the sample changed. */
  stored: Record<MetricResolution, MetricSample | undefined>;
  /** When the model was last sampled per resolution: reads fill up to it. */
  sampledAt: Record<MetricResolution, number | undefined>;
}

type Totals = {
  requestsPerSecond: number;
  p50Ms: number | null;
  p99Ms: number | null;
  loads: number;
  evictions: number;
};

export class MetricHistory {
  readonly #series = new Map<string, ModelSeries>();
  readonly #delta = new Uint32Array(LATENCY_BUCKETS);
  readonly #resolutions: Record<MetricResolution, Resolution>;
  #pending: MetricSampleInsert[] = [];
  #minuteStart = 0;
  #ticks = 0;
  readonly #stopTicks: (() => void) | null;
  #writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: Store,
    private readonly port: ModelPort,
    private readonly topic: Topic,
    private readonly log: Logger,
    /** The seconds' step, ms: how often `ticks` calls. */
    stepMs: number,
    /**
     * Calls its argument every `stepMs` and returns how to stop: the feed's load turn, so that a
     * tick's metrics leave with the queue and residency changes of the same turn. Null: only
     * explicit tick() calls (tests).
     */
    ticks: ((tick: () => void) => () => void) | null,
  ) {
    this.#resolutions = { s: new Resolution(stepMs), m: new Resolution(MINUTE_MS) };
    this.#stopTicks = ticks?.(() => this.tick(Date.now())) ?? null;
  }

  tick(at: number): void {
    const samples = new Map<string, Values>();
    const totals: Totals = { requestsPerSecond: 0, p50Ms: null, p99Ms: null, loads: 0, evictions: 0 };
    const models = this.port.loads();
    if (this.#series.size > models.length) this.#forgetAllBut(new Set(models.map((m) => m.name)));
    for (const m of models) {
      let series = this.#series.get(m.name);
      let rate = 0;
      if (series === undefined) {
        series = {
          at,
          served: m.requestsServed,
          latency: null,
          minute: null,
          stored: { s: undefined, m: undefined },
          sampledAt: { s: undefined, m: undefined },
        };
        this.#series.set(m.name, series);
      } else {
        const dt = (at - series.at) / 1000;
        if (dt > 0) rate = Math.max(0, m.requestsServed - series.served) / dt;
        series.at = at;
        series.served = m.requestsServed;
      }
      const [p50Ms, p99Ms] = this.#percentiles(m.name, series);
      const values: Values = {
        requestsPerSecond: rate,
        p50Ms,
        p99Ms,
        queueDepth: m.queueDepth,
        residentBytes: m.residentBytes,
        loads: m.loads,
        evictions: m.evictions,
      };
      samples.set(m.name, values);
      addTo(totals, values);
      this.#keep(m.name, series, 's', { at, ...values });
      const sum = series.minute;
      if (sum === null) {
        series.minute = { n: 1, requestsPerSecond: rate, queueDepth: values.queueDepth, last: values };
      } else {
        sum.n++;
        sum.requestsPerSecond += rate;
        sum.queueDepth = Math.max(sum.queueDepth, values.queueDepth);
        sum.last = values;
      }
    }
    // Only the models whose sample changed go to the feed (most of a large repository is idle),
    // with the totals over all of them, which a console's snapshot holds five minutes of.
    this.topic.set(samples, { at, totals });
    if (this.#minuteStart === 0) this.#minuteStart = at;
    if (at - this.#minuteStart >= MINUTE_MS) this.#closeMinute(at);
    const ticks = ++this.#ticks;
    if (ticks % FLUSH_EVERY === 0) void this.flush(at, ticks % PRUNE_EVERY === 0);
  }

  /** Queues the sample as a row if it is to be stored, and notes that the model was sampled. */
  #keep(model: string, series: ModelSeries, resolution: MetricResolution, sample: MetricSample): void {
    series.sampledAt[resolution] = sample.at;
    if (!this.#resolutions[resolution].keeps(series.stored[resolution], sample)) return;
    series.stored[resolution] = sample;
    this.#pending.push({ model, resolution, ...sample });
  }

  #closeMinute(at: number): void {
    for (const [model, series] of this.#series) this.#closeMinuteOf(model, series);
    this.#minuteStart = at;
  }

  /** The model's row for the minute now ending, from its sum and the latency counts within it. */
  #closeMinuteOf(model: string, series: ModelSeries): void {
    const sum = series.minute;
    if (sum === null) return;
    series.minute = null;
    let p: (number | null)[] = [null, null];
    if (series.latency !== null) {
      p = percentilesMs(series.latency.minute, [0.5, 0.99]);
      series.latency.minute.fill(0);
    }
    this.#keep(model, series, 'm', {
      ...sum.last,
      at: this.#minuteStart,
      requestsPerSecond: sum.requestsPerSecond / sum.n,
      queueDepth: sum.queueDepth,
      p50Ms: p[0] ?? null,
      p99Ms: p[1] ?? null,
    });
  }

  /** Models gone from the engine: the minute they were in is written now, then they are forgotten. */
  #forgetAllBut(names: ReadonlySet<string>): void {
    for (const [model, series] of this.#series) {
      if (names.has(model)) continue;
      this.#closeMinuteOf(model, series);
      this.#series.delete(model);
    }
  }

  /** p50 and p99 of the requests answered since the last sample; adds them to the minute's counts. */
  #percentiles(model: string, series: ModelSeries): [number | null, number | null] {
    const latency = this.port.latency(model);
    if (!latency) return [null, null];
    const counts = latency.counts;
    let l = series.latency;
    // A slot made again (unload, then load) has counts of its own, from zero: all of them are new.
    if (l === null || l.source !== counts) {
      // The first sample of a model has no previous counts: it counts what came before it.
      l = {
        source: counts,
        prevTotal: 0,
        prev: new Uint32Array(LATENCY_BUCKETS),
        minute: l?.minute ?? new Uint32Array(LATENCY_BUCKETS),
      };
      series.latency = l;
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
    const res = this.#resolutions[resolution];
    const from = Math.max(0, sinceAt - res.toleranceMs);
    // Rows not yet written, taken first: a flush that starts meanwhile writes them, and the read
    // may then see them too (dropped below as the same sample).
    const unwritten = this.#pending.filter((r) => r.model === model && r.resolution === resolution && r.at >= from);
    await this.#writing;
    const rows = (await this.store.listMetricSamples(model, resolution, from)).map(sampleOf);
    for (const r of unwritten) rows.push(sampleOf(r));
    rows.sort((a, b) => a.at - b.at);
    const distinct = rows.filter((r, i) => i === 0 || r.at !== rows[i - 1]!.at);
    const sampledAt = this.#series.get(model)?.sampledAt[resolution];
    return fillSamples(distinct, res.stepMs, res.toleranceMs, sampledAt).filter((r) => r.at >= sinceAt);
  }

  flush(at = Date.now(), prune = true): Promise<void> {
    const rows = this.#pending;
    this.#pending = [];
    this.#writing = this.#writing.then(async () => {
      try {
        await this.store.appendMetricSamples(rows);
        if (prune) {
          // One row before each window is kept: the one its first samples are filled from.
          await this.store.pruneMetricSamples('s', at - SECOND_RETENTION_MS - this.#resolutions.s.toleranceMs);
          await this.store.pruneMetricSamples('m', at - MINUTE_RETENTION_MS - this.#resolutions.m.toleranceMs);
        }
      } catch (err) {
        this.log.warn('metric samples not stored', { error: (err as Error).message });
      }
    });
    return this.#writing;
  }

  close(): Promise<void> {
    this.#stopTicks?.();
    return this.flush();
  }
}

function addTo(totals: Totals, v: Values): void {
  totals.requestsPerSecond += v.requestsPerSecond;
  totals.loads += v.loads;
  totals.evictions += v.evictions;
  const p50 = v.p50Ms ?? null;
  const p99 = v.p99Ms ?? null;
  if (p50 !== null) totals.p50Ms = Math.max(totals.p50Ms ?? 0, p50);
  if (p99 !== null) totals.p99Ms = Math.max(totals.p99Ms ?? 0, p99);
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
