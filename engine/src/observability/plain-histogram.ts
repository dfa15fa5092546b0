import type { Metric, Registry } from 'prom-client';

/** One exposition line as prom-client's registry reads it. */
export interface HistogramValue {
  readonly metricName: string;
  readonly labels: Readonly<Record<string, string | number>>;
  readonly value: number;
}

/** A histogram's series at one instant (PlainHistogram.capture()). */
export interface HistogramCapture {
  readonly name: string;
  readonly help: string;
  readonly label: string;
  readonly bounds: readonly number[];
  readonly series: readonly { labelValue: string; counts: Float64Array; sum: number; count: number }[];
}

/** What the registry reads from a metric when it formats a scrape. */
export interface HistogramSnapshot {
  readonly name: string;
  readonly help: string;
  readonly type: 'histogram';
  readonly aggregator: 'sum';
  readonly values: readonly HistogramValue[];
}

interface Series {
  readonly labels: Readonly<Record<string, string>>;
  /** Per-bucket (not cumulative) counts; the last slot is +Inf. */
  readonly counts: Float64Array;
  sum: number;
  count: number;
}

/**
 * A Prometheus histogram with one label, kept in plain arrays and formatted only when scraped.
 *
 * prom-client's Histogram validates and hashes the label set on every observe (about 1 µs per
 * request on the request path, measured). Here an observation is a Map lookup and a bucket scan;
 * the exposition is the same as prom-client's (cumulative `_bucket` series with `le` first, then
 * `_sum` and `_count`).
 */
export class PlainHistogram<L extends string> {
  readonly name: string;
  readonly help: string;
  readonly type = 'histogram' as const;
  readonly aggregator = 'sum' as const;
  readonly #label: L;
  readonly #bounds: readonly number[];
  readonly #series = new Map<string, Series>();

  constructor(o: { name: string; help: string; labelName: L; buckets: readonly number[]; registry: Registry }) {
    this.name = o.name;
    this.help = o.help;
    this.#label = o.labelName;
    this.#bounds = [...o.buckets].sort((a, b) => a - b);
    // The registry only reads name, help, type and get(); its type names the built-in classes.
    o.registry.registerMetric(this as unknown as Metric);
  }

  observe(labelValue: string, value: number): void {
    let s = this.#series.get(labelValue);
    if (s === undefined) {
      s = {
        labels: { [this.#label]: labelValue },
        counts: new Float64Array(this.#bounds.length + 1),
        sum: 0,
        count: 0,
      };
      this.#series.set(labelValue, s);
    }
    const b = this.#bounds;
    let i = 0;
    // le is inclusive, as in Prometheus; NaN lands in +Inf.
    while (i < b.length && !(value <= b[i]!)) i++;
    s.counts[i]!++;
    s.sum += value;
    s.count++;
  }

  /** One label value's buckets (per bucket, not cumulative; the last is +Inf), or undefined. */
  series(labelValue: string): { bounds: readonly number[]; counts: number[]; sum: number; count: number } | undefined {
    const s = this.#series.get(labelValue);
    return s && { bounds: this.#bounds, counts: [...s.counts], sum: s.sum, count: s.count };
  }

  /** Drops one label value's series (a model that was unloaded). */
  remove(labelValue: string): void {
    this.#series.delete(labelValue);
  }

  reset(): void {
    this.#series.clear();
  }

  /** Every series' counts as of now (copies), for exposition() to format later. */
  capture(): HistogramCapture {
    const series = [...this.#series.values()].map((s) => ({
      labelValue: s.labels[this.#label]!,
      counts: s.counts.slice(),
      sum: s.sum,
      count: s.count,
    }));
    return { name: this.name, help: this.help, label: this.#label, bounds: this.#bounds, series };
  }

  get(): HistogramSnapshot {
    const values: HistogramValue[] = [];
    for (const s of this.#series.values()) {
      let cumulative = 0;
      for (let i = 0; i <= this.#bounds.length; i++) {
        cumulative += s.counts[i]!;
        const le = i < this.#bounds.length ? this.#bounds[i]! : '+Inf';
        values.push({ metricName: `${this.name}_bucket`, labels: { le, ...s.labels }, value: cumulative });
      }
      values.push({ metricName: `${this.name}_sum`, labels: { ...s.labels }, value: s.sum });
      values.push({ metricName: `${this.name}_count`, labels: { ...s.labels }, value: s.count });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}
