import { setImmediate as yieldToIo } from 'node:timers/promises';
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { familyText, histogramText, type FamilyValues } from './exposition.js';
import { PlainHistogram } from './plain-histogram.js';

/** What one finished request contributes to the metrics (durations in microseconds). */
export interface RequestSample {
  model: string;
  ok: boolean;
  /** Triton's failure reasons: REJECTED (queue/admission), CANCELED, BACKEND (device), OTHER. */
  reason?: 'REJECTED' | 'CANCELED' | 'BACKEND' | 'OTHER';
  batchRows: number;
  totalUs: number;
  queueUs: number;
  computeInputUs: number;
  computeInferUs: number;
  computeOutputUs: number;
}

const LATENCY_BUCKETS = Array.from({ length: 14 }, (_, k) => 0.001 * 2 ** k);

type FailureReason = NonNullable<RequestSample['reason']>;

/** The compiled-executable cache's counters (device/executable-cache.ts), read when scraped. */
export interface CompileCacheCounts {
  readonly hits: number;
  readonly misses: number;
  readonly rejected: number;
  readonly evictions: number;
  readonly bytes: number;
}

/** One model's request counters, summed in plain numbers and published when scraped. */
interface RequestTotals {
  readonly labels: { readonly model: string; readonly version: string };
  success: number;
  count: number;
  requestUs: number;
  queueUs: number;
  inputUs: number;
  inferUs: number;
  outputUs: number;
  readonly failures: Map<FailureReason, number>;
}

type TotalsField = 'success' | 'count' | 'requestUs' | 'queueUs' | 'inputUs' | 'inferUs' | 'outputUs';

/**
 * The worker's Prometheus registry. Triton's names (nv_inference_*) where they mean the same
 * thing, so existing dashboards work; hloserve_* for what Triton has no name for (the weight
 * cache, batching, the dispatch loop).
 */
export class Metrics {
  readonly registry = new Registry();
  // Per-request counters are plain sums read at scrape time: prom-client hashes the label set on
  // every inc (3.6 µs for a request's seven updates, measured), which sat on the request path.
  readonly #totals = new Map<string, RequestTotals>();
  /** Executions per model, summed like #totals (one update per dispatch). */
  readonly #executions = new Map<string, { readonly labels: RequestTotals['labels']; n: number; ns: number }>();
  readonly pending: Gauge<'model' | 'version'>;
  readonly #latency: PlainHistogram<'model'>;
  readonly #batchSize: PlainHistogram<'model'>;
  #inflightNow: () => number = () => 0;
  #feedClientsNow: () => number = () => 0;
  #compileCacheNow: () => CompileCacheCounts | null = () => null;
  readonly #weightLoads: Counter<'model'>;
  readonly #weightEvictions: Counter<'model'>;
  readonly #weightLoadSeconds: Counter<'model'>;
  readonly #weightBytesLoaded: Counter<'model'>;
  readonly residentBytes: Gauge;
  readonly budgetBytes: Gauge;
  readonly arenaBytes: Gauge<'state'>;
  readonly modelResident: Gauge<'model'>;
  /** Lifecycle events by model and type (loaded, reloaded, failed, unloaded, renamed, ...). */
  readonly lifecycleEvents: Counter<'model' | 'event'>;
  /** Bundle modules compiled, by model: a rename adds none. */
  readonly compiles: Counter<'model'>;
  readonly queueDepth: Gauge<'model'>;
  readonly shed: Counter<'model' | 'reason'>;

  constructor(options: { defaultMetrics?: boolean } = {}) {
    const r = [this.registry];
    const mv = ['model', 'version'] as const;
    const totals = this.#totals;
    const executions = this.#executions;
    const summedOver = <T extends { readonly labels: RequestTotals['labels'] }>(
      name: string,
      help: string,
      source: ReadonlyMap<string, T>,
      read: (t: T) => number,
    ): void => {
      new Counter({
        name,
        help,
        labelNames: mv,
        registers: r,
        collect(this: Counter<'model' | 'version'>) {
          this.reset();
          for (const t of source.values()) this.inc(t.labels, read(t));
        },
      });
    };
    const summed = (name: string, help: string, field: TotalsField): void =>
      summedOver(name, help, totals, (t) => t[field]);
    summed('nv_inference_request_success', 'Successful inference requests', 'success');
    new Counter({
      name: 'nv_inference_request_failure',
      help: 'Failed inference requests',
      labelNames: ['model', 'version', 'reason'],
      registers: r,
      collect(this: Counter<'model' | 'version' | 'reason'>) {
        this.reset();
        for (const t of totals.values()) for (const [reason, n] of t.failures) this.inc({ ...t.labels, reason }, n);
      },
    });
    summed('nv_inference_count', 'Inferences performed (a batch of n counts n)', 'count');
    summedOver('nv_inference_exec_count', 'Model executions (batches) performed', executions, (e) => e.n);
    // Triton's compute_infer adds a batch's execution time once per request in it; the device was
    // busy for it once. This is the busy time (what the gateway places by).
    summedOver(
      'hloserve_execution_duration_us',
      'Cumulative device time of model executions, each counted once however many requests it served (µs)',
      executions,
      (e) => e.ns / 1000,
    );
    summed('nv_inference_request_duration_us', 'Cumulative request duration (µs)', 'requestUs');
    summed('nv_inference_queue_duration_us', 'Cumulative time requests waited in queue (µs)', 'queueUs');
    summed('nv_inference_compute_input_duration_us', 'Cumulative input preparation time (µs)', 'inputUs');
    summed('nv_inference_compute_infer_duration_us', 'Cumulative model execution time (µs)', 'inferUs');
    summed('nv_inference_compute_output_duration_us', 'Cumulative output processing time (µs)', 'outputUs');
    this.pending = new Gauge({
      name: 'nv_inference_pending_request_count',
      help: 'Requests queued and not yet executing',
      labelNames: mv,
      registers: r,
    });
    this.#latency = new PlainHistogram({
      name: 'hloserve_request_latency_seconds',
      help: 'End-to-end request latency in the worker',
      labelName: 'model',
      buckets: LATENCY_BUCKETS,
      registry: this.registry,
    });
    this.#batchSize = new PlainHistogram({
      name: 'hloserve_batch_size',
      help: 'Compiled batch size of each execution',
      labelName: 'model',
      buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256],
      registry: this.registry,
    });
    this.#weightLoads = new Counter({
      name: 'hloserve_weight_loads_total',
      help: 'Weight uploads to the device (cold starts)',
      labelNames: ['model'],
      registers: r,
    });
    this.#weightEvictions = new Counter({
      name: 'hloserve_weight_evictions_total',
      help: 'Weight sets evicted from the device',
      labelNames: ['model'],
      registers: r,
    });
    this.#weightLoadSeconds = new Counter({
      name: 'hloserve_weight_load_seconds_total',
      help: 'Time spent uploading weights',
      labelNames: ['model'],
      registers: r,
    });
    this.#weightBytesLoaded = new Counter({
      name: 'hloserve_weight_loaded_bytes_total',
      help: 'Bytes of weights uploaded',
      labelNames: ['model'],
      registers: r,
    });
    this.residentBytes = new Gauge({
      name: 'hloserve_weight_resident_bytes',
      help: 'Weight bytes resident on the device',
      registers: r,
    });
    this.budgetBytes = new Gauge({
      name: 'hloserve_weight_budget_bytes',
      help: 'Byte budget of the weight cache (-1 unlimited)',
      registers: r,
    });
    this.arenaBytes = new Gauge({
      name: 'hloserve_device_arena_bytes',
      help: 'Device arena (CPU plugin): limit, mapped and used bytes',
      labelNames: ['state'],
      registers: r,
    });
    this.modelResident = new Gauge({
      name: 'hloserve_model_resident',
      help: '1 when the model weights are on the device',
      labelNames: ['model'],
      registers: r,
    });
    this.lifecycleEvents = new Counter({
      name: 'hloserve_model_lifecycle_events_total',
      help: 'Model lifecycle events (loading, loaded, reloaded, failed, unloaded, renamed, evicted, residency-changed)',
      labelNames: ['model', 'event'],
      registers: r,
    });
    this.compiles = new Counter({
      name: 'hloserve_model_compiles_total',
      help: 'Model modules compiled (one per compiled batch size per load or reload)',
      labelNames: ['model'],
      registers: r,
    });
    this.queueDepth = new Gauge({
      name: 'hloserve_queue_depth',
      help: 'Requests queued per model',
      labelNames: ['model'],
      registers: r,
    });
    const inflightNow = (): number => this.#inflightNow();
    new Gauge({
      name: 'hloserve_inflight_requests',
      help: 'Requests being served',
      registers: r,
      collect(this: Gauge) {
        this.set(inflightNow());
      },
    });
    const feedClientsNow = (): number => this.#feedClientsNow();
    new Gauge({
      name: 'hloserve_console_feed_clients',
      help: "Open connections to the console's live feed (WebSocket /api/v1/stream)",
      registers: r,
      collect(this: Gauge) {
        this.set(feedClientsNow());
      },
    });
    const compileCacheNow = (): CompileCacheCounts | null => this.#compileCacheNow();
    const cacheCounters: ReadonlyArray<readonly [string, string, keyof CompileCacheCounts]> = [
      ['hloserve_compile_cache_hits_total', 'Executables loaded from the compiled-executable cache', 'hits'],
      ['hloserve_compile_cache_misses_total', 'Executables compiled: no usable cache entry', 'misses'],
      ['hloserve_compile_cache_rejected_total', 'Cache entries found corrupt, truncated or stale', 'rejected'],
      ['hloserve_compile_cache_evictions_total', 'Cache entries removed to stay under max_bytes', 'evictions'],
    ];
    for (const [name, help, field] of cacheCounters) {
      new Counter({
        name,
        help,
        registers: r,
        collect(this: Counter) {
          this.reset();
          this.inc(compileCacheNow()?.[field] ?? 0);
        },
      });
    }
    new Gauge({
      name: 'hloserve_compile_cache_bytes',
      help: 'Bytes of the compiled-executable cache on disk',
      registers: r,
      collect(this: Gauge) {
        this.set(compileCacheNow()?.bytes ?? 0);
      },
    });
    this.shed = new Counter({
      name: 'hloserve_requests_shed_total',
      help: 'Requests refused or dropped before execution',
      labelNames: ['model', 'reason'],
      registers: r,
    });
    if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry, prefix: 'hloserve_process_' });
  }

  request(s: RequestSample): void {
    let t = this.#totals.get(s.model);
    if (t === undefined) {
      t = {
        labels: { model: s.model, version: '1' },
        success: 0,
        count: 0,
        requestUs: 0,
        queueUs: 0,
        inputUs: 0,
        inferUs: 0,
        outputUs: 0,
        failures: new Map(),
      };
      this.#totals.set(s.model, t);
    }
    if (s.ok) {
      t.success++;
      t.count += s.batchRows;
    } else {
      const reason = s.reason ?? 'OTHER';
      t.failures.set(reason, (t.failures.get(reason) ?? 0) + 1);
    }
    t.requestUs += s.totalUs;
    t.queueUs += s.queueUs;
    t.inputUs += s.computeInputUs;
    t.inferUs += s.computeInferUs;
    t.outputUs += s.computeOutputUs;
    this.#latency.observe(s.model, s.totalUs / 1e6);
  }

  /** One model's request latency histogram (seconds), for the control API; undefined before any request. */
  latencyHistogram(model: string): ReturnType<PlainHistogram<'model'>['series']> {
    return this.#latency.series(model);
  }

  /** One device execution of `model` at compiled size `batchSize` that took `computeSeconds`. */
  execution(model: string, batchSize: number, computeSeconds: number): void {
    let e = this.#executions.get(model);
    if (e === undefined) this.#executions.set(model, (e = { labels: { model, version: '1' }, n: 0, ns: 0 }));
    e.n++;
    e.ns += Math.round(computeSeconds * 1e9);
    this.#batchSize.observe(model, batchSize);
  }

  /** Where the compile-cache metrics read their values when scraped. */
  trackCompileCache(read: () => CompileCacheCounts | null): void {
    this.#compileCacheNow = read;
  }

  /** Where the feed-clients gauge reads its value when scraped (the console's feed hub). */
  trackFeedClients(read: () => number): void {
    this.#feedClientsNow = read;
  }

  /** Where the in-flight gauge reads its value when scraped (the worker's own counter). */
  trackInflight(read: () => number): void {
    this.#inflightNow = read;
  }

  weightLoad(model: string, bytes: number, seconds: number): void {
    this.#weightLoads.inc({ model });
    this.#weightBytesLoaded.inc({ model }, bytes);
    this.#weightLoadSeconds.inc({ model }, seconds);
    this.modelResident.set({ model }, 1);
  }

  weightEviction(model: string): void {
    this.#weightEvictions.inc({ model });
    this.modelResident.set({ model }, 0);
  }

  /**
   * What registry.metrics() answers. Every family is read in one turn, so a scrape is one
   * instant (a cancel counted and the queue it left agree), then formatted a few hundred lines per
   * turn (exposition.ts).
   */
  async text(): Promise<string> {
    const read = await Promise.all(
      this.registry.getMetricsAsArray().map((metric) => {
        const family: unknown = metric;
        return family instanceof PlainHistogram
          ? family.capture()
          : (metric as unknown as { get(): Promise<FamilyValues> }).get();
      }),
    );
    const families: string[] = [];
    for (const f of read) {
      const lines: string[] = [];
      if ('series' in f) await histogramText(f, lines);
      else await familyText(f, lines);
      families.push(lines.join('\n'));
      await yieldToIo();
    }
    return `${families.join('\n\n')}\n`;
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
