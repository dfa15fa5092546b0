import { join } from 'node:path';
import { readFile } from 'node:fs/promises';
import { type DeviceBuffer, Runtime } from '@hloserve/native';
import { type Bundle, loadBundle } from '../bundle/bundle.js';
import { discoverBundles } from '../bundle/discover.js';
import type { WorkerSettings } from '../config/types.js';
import { type DecodedRequest, decodeRequest, readSharedInputs } from '../codec/decode.js';
import { encodeOutputs, writeSharedOutputs } from '../codec/encode.js';
import type { ModelIO } from '../codec/model-io.js';
import type { WireInferRequest, WireInferResponse, WireOutput } from '@hloserve/common/wire';
import { invalidArgument, ServeError, toServeError } from '@hloserve/common/errors';
import type {
  InferContext,
  InferenceService,
  ModelConfigJson,
  ModelIndexEntry,
  ModelMetadata,
  ModelState,
  ModelStatisticsJson,
  ServerMetadata,
} from '../kserve/service.js';
import { SharedMemoryRegistry } from '../kserve/shared-memory.js';
import type { Logger } from '../log.js';
import { Metrics, type RequestSample } from '../metrics.js';
import { type ExecutableCache, openExecutableCache } from '../device/executable-cache.js';
import { CompiledModel } from '../model/compiled-model.js';
import { resolveModelInfo, type ModelSchedulingInfo } from '../scheduler/model-info.js';
import { Scheduler, type RequestTiming } from '../scheduler/scheduler.js';
import type { HostTensor } from '../tensor.js';
import { WeightCache } from '../weights/weight-cache.js';
import { weightBudget } from '../weights/weight-budget.js';
import { modelConfig, modelIO, modelMetadata } from './model-views.js';
import { ModelStatistics } from './model-statistics.js';
import { PjrtExecutor, type PjrtLease } from './pjrt-executor.js';
import { arenaLimit, type HostWeights, PjrtWeightBackend } from './pjrt-weight-backend.js';

export const SERVER_NAME = 'hloserve';
export const SERVER_VERSION = '0.1.0';
const EXTENSIONS = [
  'model_repository',
  'model_configuration',
  'system_shared_memory',
  'binary_tensor_data',
  'statistics',
  'parameters',
];

interface Entry {
  readonly name: string;
  state: ModelState;
  reason: string;
  bundle: Bundle | null;
  compiled: CompiledModel | null;
  io: ModelIO | null;
  sizes: number[];
  maxQueueDelayUs: number;
  readonly stats: ModelStatistics;
}

type ReadyEntry = Entry & { bundle: Bundle; compiled: CompiledModel; io: ModelIO };

/** One request from decode to answer. It is also the scheduler's timing record for that request. */
class InferCall implements RequestTiming {
  submittedAt: number | undefined = undefined;
  settledAt: number | undefined = undefined;
  queueSeconds: number | undefined = undefined;
  computeSeconds: number | undefined = undefined;
  batchSize: number | undefined = undefined;
  batchRows: number | undefined = undefined;

  readonly writesSharedMemory: boolean;

  constructor(
    readonly entry: ReadyEntry,
    readonly decoded: DecodedRequest,
    readonly id: string,
    /** Scheduler clock (ms) when the request arrived. */
    readonly t0: number,
  ) {
    let shm = false;
    for (const o of decoded.outputs) if (o.shm !== null) shm = true;
    this.writesSharedMemory = shm;
  }
}

export interface WorkerOptions {
  readonly modelRepo: string;
  readonly settings: WorkerSettings;
  readonly log: Logger;
  /** Overrides the runtime (tests share one). */
  readonly runtime?: Runtime;
}

/** Weights load into a device arena where the device is host memory and the cache has a budget. */
function usesDeviceArena(config: { readonly deviceArena: boolean }, runtime: Runtime, budgetBytes: number): boolean {
  return config.deviceArena && runtime.hostAddressableDevice && Number.isFinite(budgetBytes);
}

/**
 * One worker: one PJRT client on one device, the models of a repository, the scheduler and the
 * weight cache. It implements the transport-neutral InferenceService behind gRPC and HTTP.
 */
export class Worker implements InferenceService {
  readonly runtime: Runtime;
  readonly metrics = new Metrics();
  readonly sharedMemory: SharedMemoryRegistry | null;
  readonly limits: { readonly maxRecvBytes: number; readonly maxSendBytes: number };
  readonly scheduler: Scheduler<PjrtLease>;
  readonly cache: WeightCache<HostWeights, readonly DeviceBuffer[]>;
  readonly #backend: PjrtWeightBackend;
  readonly #entries = new Map<string, Entry>();
  readonly #settings: WorkerSettings;
  readonly #modelRepo: string;
  readonly #log: Logger;
  readonly #ownsRuntime: boolean;
  #stopping = false;
  #inflight = 0;
  /** The largest weights of any model loaded so far (sizes the device arena). */
  #largestWeights = 0;
  // Scratch records for a served request's statistics and metrics, filled and consumed
  // synchronously, so the success path allocates neither (measured with V8's sampling heap
  // profiler: part of the ~5 kB a request allocated; fewer bytes, fewer scavenges).
  readonly #okStats = { at: 0, total: 0, queue: 0, input: 0, infer: 0, output: 0 };
  readonly #okSample: RequestSample = {
    model: '',
    ok: true,
    batchRows: 0,
    totalUs: 0,
    queueUs: 0,
    computeInputUs: 0,
    computeInferUs: 0,
    computeOutputUs: 0,
  };

  /** Compiled executables on disk (null when compile_cache.max_bytes is 0). */
  readonly compileCache: ExecutableCache | null;

  private constructor(o: WorkerOptions, runtime: Runtime, budgetBytes: number, compileCache: ExecutableCache | null) {
    this.runtime = runtime;
    this.compileCache = compileCache;
    this.metrics.trackCompileCache(() => compileCache?.stats() ?? null);
    this.#ownsRuntime = !o.runtime;
    this.#settings = o.settings;
    this.#modelRepo = o.modelRepo;
    this.#log = o.log;
    const s = o.settings;
    this.limits = { maxRecvBytes: s.endpoints.maxRecvMsgBytes, maxSendBytes: s.endpoints.maxSendMsgBytes };
    this.sharedMemory = s.endpoints.allowSharedMemory ? new SharedMemoryRegistry() : null;
    const arena = usesDeviceArena(s.runtime, runtime, budgetBytes)
      ? runtime.createArena({ limitBytes: arenaLimit(budgetBytes) })
      : undefined;
    this.#backend = new PjrtWeightBackend(runtime, { arena });
    const logger = { warn: (msg: string, fields?: Record<string, unknown>) => o.log.warn(msg, fields) };
    this.cache = new WeightCache({
      backend: this.#backend,
      budgetBytes,
      logger,
      onEvent: (e) => {
        if (e.type === 'load') this.metrics.weightLoad(e.model, e.bytes, e.seconds);
        else if (e.type === 'evict') this.metrics.weightEviction(e.model);
      },
    });
    this.metrics.trackInflight(() => this.#inflight);
    this.metrics.budgetBytes.set(Number.isFinite(budgetBytes) ? budgetBytes : -1);
    this.scheduler = new Scheduler<PjrtLease>({
      executor: new PjrtExecutor(this.cache, (n) => this.#entries.get(n)?.compiled ?? undefined),
      discipline: s.scheduler.discipline,
      emaHalflifeSeconds: s.scheduler.emaHalflifeSeconds,
      recencyPenaltyCap: s.scheduler.recencyPenaltyCap,
      coalescingDiscount: s.scheduler.coalescingDiscount,
      costEmaAlpha: s.scheduler.costEmaAlpha,
      maxQueueDepth: s.scheduler.maxQueueDepth,
      dispatchTimeoutSeconds: s.scheduler.dispatchTimeoutSeconds,
      coldHoldMs: s.scheduler.coldHoldUs / 1000,
      logger,
      onEvent: (e) => {
        if (e.type === 'dispatch-done' && e.outcome === 'ok') {
          this.metrics.execution(e.model, e.batchSize);
          this.#entries.get(e.model)?.stats.execution(e.batchSize, e.computeSeconds);
        } else if (e.type === 'request-dropped') {
          this.metrics.shed.inc({ model: e.model, reason: e.reason });
        }
      },
    });
  }

  static async start(o: WorkerOptions): Promise<Worker> {
    const rt = o.settings.runtime;
    const runtime =
      o.runtime ??
      (await Runtime.create({
        plugin: rt.plugin,
        cpuDeviceCount: rt.cpuDeviceCount,
        cuda: { memoryFraction: rt.memoryFraction, preallocate: rt.preallocate, allocator: rt.allocator },
      }));
    const stats = runtime.memoryStats(0);
    let budget = Infinity;
    if (rt.weightCacheBytes !== null) budget = rt.weightCacheBytes;
    else if (stats?.bytesLimit)
      budget = weightBudget(stats.bytesLimit, rt.weightCacheFraction, rt.weightCacheWiggleFraction, 0, 0).onDemand;
    o.log.info('runtime ready', {
      platform: runtime.platformName,
      plugin: runtime.plugin.path,
      pjrtApi: runtime.plugin.apiVersion.join('.'),
      memorySpaces: runtime.memoryKinds(0),
      devices: runtime.devices.length,
      weightBudgetBytes: Number.isFinite(budget) ? budget : 'unlimited',
      deviceArena: usesDeviceArena(rt, runtime, budget),
    });
    const w = new Worker(o, runtime, budget, await openExecutableCache(o.settings, o.log));
    await w.loadRepository();
    return w;
  }

  /** Loads every bundle of the repository (models_include applies); one bad bundle stops none. */
  async loadRepository(): Promise<void> {
    const found = await discoverBundles(this.#modelRepo, { include: this.#settings.modelsInclude });
    for (const d of found) {
      if (!d.ok) {
        this.#entries.set(d.name, this.#newEntry(d.name, 'UNAVAILABLE', d.error.message));
        this.#log.error('bundle failed to load', { model: d.name, error: d.error.message });
        continue;
      }
      await this.#load(d.bundle).catch(() => undefined);
    }
  }

  #newEntry(name: string, state: ModelState, reason: string): Entry {
    return {
      name,
      state,
      reason,
      bundle: null,
      compiled: null,
      io: null,
      sizes: [],
      maxQueueDelayUs: 0,
      stats: new ModelStatistics(),
    };
  }

  // Loads and unloads of one model run one after another; other models are never blocked.
  readonly #lifecycle = new Map<string, Promise<unknown>>();

  #serialized<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.#lifecycle.get(name) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const tail = next.catch(() => undefined);
    this.#lifecycle.set(name, tail);
    void tail.then(() => {
      if (this.#lifecycle.get(name) === tail) this.#lifecycle.delete(name);
    });
    return next;
  }

  #load(bundle: Bundle, signal?: AbortSignal): Promise<void> {
    return this.#serialized(bundle.name, () => this.#loadNow(bundle, signal));
  }

  async #loadNow(bundle: Bundle, signal?: AbortSignal): Promise<void> {
    const name = bundle.name;
    const entry = this.#entries.get(name) ?? this.#newEntry(name, 'LOADING', '');
    entry.state = 'LOADING';
    entry.reason = '';
    this.#entries.set(name, entry);
    const started = performance.now();
    try {
      if (bundle.notServable) throw new ServeError('HLO_ERR_BUNDLE_INVALID', bundle.notServable);
      if (bundle.hooks)
        throw new ServeError('HLO_ERR_UNSUPPORTED', `${bundle.hooks.path}: JS/TS hooks are not supported yet`);
      const modules = new Map<number, Uint8Array>();
      for (const m of bundle.modules) modules.set(m.batchSize, await readFile(m.path));
      const weights = (bundle.weights?.tensors ?? []).map((t) => ({ name: t.name, dtype: t.dtype, shape: t.shape }));
      const compiled = await CompiledModel.compile(
        this.runtime,
        { name, manifest: bundle.manifest, modules, weights },
        signal,
        this.compileCache,
      );
      const policy = this.#settings.scheduler.models[name];
      const info: ModelSchedulingInfo = {
        name,
        compiledBatchSizes: compiled.batchSizes,
        maxBatchSize: policy?.maxBatchSize ?? null,
        weight: policy?.weight ?? 1,
        inputBatchAxes: bundle.manifest.executableInputs.map((s) => s.wireBatchAxis),
        outputBatchAxes: bundle.manifest.executableOutputs.map((s) => s.wireBatchAxis),
        maxQueueDelayUs: policy?.maxQueueDelayUs ?? this.#settings.scheduler.maxQueueDelayUs,
      };
      const resolved = resolveModelInfo(info, {
        maxQueueDepth: this.#settings.scheduler.maxQueueDepth,
        maxQueueDelayUs: this.#settings.scheduler.maxQueueDelayUs,
      });
      const maxRows = resolved.cap !== null ? Math.min(resolved.cap, resolved.maxRows) : resolved.maxRows;
      // A reload swaps the weights too (the bundle may have changed). Executions still holding the
      // old lease keep it until they finish; the old executables stay alive while pinned.
      if (this.cache.has(name)) this.cache.removeModel(name);
      this.#backend.setSource(name, {
        path: bundle.weights?.path ?? null,
        argumentOrder: bundle.weights?.argumentOrder ?? [],
      });
      this.#fitArena(bundle.weights?.byteLength ?? 0);
      await this.cache.addModel({
        name,
        bytes: bundle.weights?.byteLength ?? 0,
        residency: policy?.residency ?? 'system',
      });
      // Warmup proves every module runs with these weights and seeds the cost table.
      const lease = await this.cache.acquire(name);
      let costs: Map<number, number>;
      try {
        costs = await compiled.warmup(lease.weights);
      } finally {
        lease.release();
      }
      entry.compiled?.dispose();
      entry.bundle = bundle;
      entry.compiled = compiled;
      entry.io = modelIO(bundle, maxRows);
      entry.sizes = compiled.batchSizes;
      entry.maxQueueDelayUs = info.maxQueueDelayUs ?? 0;
      if (this.scheduler.hasModel(name)) this.scheduler.replaceModel(info);
      else this.scheduler.addModel(info);
      for (const [b, s] of costs) this.scheduler.seedCost(name, b, s);
      entry.state = 'READY';
      this.#log.info('model ready', {
        model: name,
        batchSizes: entry.sizes,
        weightBytes: bundle.weights?.byteLength ?? 0,
        residency: policy?.residency ?? 'system',
        loadSeconds: +((performance.now() - started) / 1e3).toFixed(3),
      });
    } catch (err) {
      const e = toServeError(err);
      entry.state = 'UNAVAILABLE';
      entry.reason = e.message;
      this.#log.error('model failed to load', { model: name, error: e.message });
      if (!entry.compiled) {
        this.cache.removeModel(name);
        this.#backend.removeSource(name);
      }
      throw e;
    }
  }

  // ---- InferenceService ----------------------------------------------------------------------

  serverLive(): boolean {
    return true;
  }

  serverReady(): boolean {
    return !this.#stopping && [...this.#entries.values()].some((e) => e.state === 'READY');
  }

  serverMetadata(): ServerMetadata {
    return { name: SERVER_NAME, version: SERVER_VERSION, extensions: EXTENSIONS };
  }

  #entry(name: string, version: string): Entry {
    if (!name) throw invalidArgument('model name must not be empty');
    if (version && version !== '1')
      throw new ServeError('HLO_ERR_MODEL_NOT_FOUND', `model '${name}' has no version '${version}' (only '1')`);
    const e = this.#entries.get(name);
    if (!e) throw new ServeError('HLO_ERR_MODEL_NOT_FOUND', `Request for unknown model: '${name}' is not found`);
    return e;
  }

  #ready(name: string, version: string): ReadyEntry {
    const e = this.#entry(name, version);
    if (e.state !== 'READY' || !e.bundle || !e.compiled || !e.io) {
      throw new ServeError(
        'HLO_ERR_MODEL_NOT_READY',
        `model '${name}' is not ready (${e.state}${e.reason ? `: ${e.reason}` : ''})`,
      );
    }
    return e as ReadyEntry;
  }

  modelReady(name: string, version: string): boolean {
    try {
      return this.#ready(name, version) !== undefined;
    } catch {
      return false;
    }
  }

  modelMetadata(name: string, version: string): ModelMetadata {
    const e = this.#entry(name, version);
    if (!e.bundle) throw new ServeError('HLO_ERR_MODEL_NOT_READY', `model '${name}' is not loaded: ${e.reason}`);
    return modelMetadata(e.bundle, this.runtime.platformName);
  }

  modelConfig(name: string, version: string): ModelConfigJson {
    const e = this.#entry(name, version);
    if (!e.bundle || !e.io)
      throw new ServeError('HLO_ERR_MODEL_NOT_READY', `model '${name}' is not loaded: ${e.reason}`);
    return modelConfig(e.bundle, e.io.maxRows, e.sizes, e.maxQueueDelayUs, this.runtime.platformName);
  }

  modelStatistics(name: string, version: string): ModelStatisticsJson[] {
    const list = name
      ? [this.#entry(name, version)]
      : [...this.#entries.values()].sort((a, b) => a.name.localeCompare(b.name));
    return list.map((e) =>
      e.stats.json(e.name, '1', e.bundle?.weights?.byteLength ?? 0, this.cache.isResident(e.name)),
    );
  }

  repositoryIndex(readyOnly: boolean): ModelIndexEntry[] {
    return [...this.#entries.values()]
      .filter((e) => !readyOnly || e.state === 'READY')
      .sort((a, b) => a.name.localeCompare(b.name))
      .map((e) => ({ name: e.name, version: '1', state: e.state, reason: e.reason }));
  }

  async loadModel(name: string, signal?: AbortSignal): Promise<void> {
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name)) throw invalidArgument(`'${name}' is not a valid model name`);
    let bundle: Bundle;
    try {
      bundle = await loadBundle(join(this.#modelRepo, name));
    } catch (err) {
      const e = toServeError(err);
      if (
        (err as { cause?: { code?: string } }).cause?.code === 'ENOENT' ||
        /ENOENT|no such file|not found/i.test(e.message)
      ) {
        throw new ServeError('HLO_ERR_MODEL_NOT_FOUND', `no bundle named '${name}' in the model repository`);
      }
      throw e;
    }
    await this.#load(bundle, signal);
  }

  unloadModel(name: string): Promise<void> {
    return this.#serialized(name, async () => this.#unloadNow(name));
  }

  #unloadNow(name: string): void {
    const e = this.#entries.get(name);
    if (!e) return;
    e.state = 'UNLOADING';
    this.scheduler.removeModel(name);
    this.cache.removeModel(name);
    this.#backend.removeSource(name);
    e.compiled?.dispose();
    this.#entries.delete(name);
    this.#log.info('model unloaded', { model: name });
  }

  /**
   * Decodes and queues a request; its answer comes from the scheduler's promise. Not an async
   * function: the request's state lives in one InferCall that also serves as the scheduler's timing
   * record, where an async frame held every local of the whole path (measured with V8's sampling
   * heap profiler, bench/RESULTS.md session 6).
   */
  infer(req: WireInferRequest, ctx: InferContext): Promise<WireInferResponse> {
    // Every reading is the scheduler's clock (epoch ms), and the scheduler's own readings at submit
    // and settle stand in for the rest: two clock reads per request instead of six.
    const t0 = this.scheduler.now();
    let entry: ReadyEntry | undefined;
    let rows = 0;
    this.#inflight++;
    let call: InferCall;
    try {
      if (this.#stopping) throw new ServeError('HLO_ERR_SHUTTING_DOWN', 'the server is shutting down');
      const cap = this.#settings.endpoints.maxConcurrentRequests;
      if (cap > 0 && this.#inflight > cap) {
        throw new ServeError(
          'HLO_ERR_OVERLOADED',
          `more than ${cap} requests in flight (endpoints.max_concurrent_requests)`,
        );
      }
      entry = this.#ready(req.modelName, req.modelVersion);
      const decoded = decodeRequest(entry.io, req, this.sharedMemory);
      rows = decoded.rows;
      if (ctx.deadline !== null && ctx.deadline <= t0) {
        throw new ServeError('HLO_ERR_DEADLINE_EXCEEDED', 'the deadline passed before the request was queued');
      }
      call = new InferCall(entry, decoded, req.id, t0);
    } catch (err) {
      return Promise.reject(this.#failed(err, entry, rows, t0));
    }
    const submit = () =>
      this.scheduler.submit(call.entry.name, call.decoded.inputs, {
        deadline: ctx.deadline,
        signal: ctx.signal,
        timing: call,
      });
    // Shared-memory inputs are copied in on the addon's threads first; inline ones are already here.
    const queued =
      call.decoded.sharedInputs.length === 0
        ? submit()
        : readSharedInputs(call.entry.io, call.decoded, this.sharedMemory!).then(submit);
    return queued.then(
      (outputs) => (call.writesSharedMemory ? this.#answerShared(call, outputs) : this.#answer(call, outputs)),
      (err: unknown) => {
        throw this.#failed(err, call.entry, call.decoded.rows, call.t0);
      },
    );
  }

  /** Writes the shared-memory outputs (on the addon's threads), then answers. */
  async #answerShared(call: InferCall, outputs: readonly HostTensor[]): Promise<WireInferResponse> {
    try {
      await writeSharedOutputs(call.decoded.outputs, outputs, this.sharedMemory!);
    } catch (err) {
      throw this.#failed(err, call.entry, call.decoded.rows, call.t0);
    }
    return this.#answer(call, outputs);
  }

  #answer(call: InferCall, outputs: readonly HostTensor[]): WireInferResponse {
    let wire: WireOutput[];
    try {
      wire = encodeOutputs(call.decoded.outputs, outputs, this.sharedMemory);
    } catch (err) {
      throw this.#failed(err, call.entry, call.decoded.rows, call.t0);
    }
    this.#inflight--;
    const t1 = call.submittedAt ?? call.t0;
    const t2 = call.settledAt ?? t1;
    // Inline outputs are wrapped, not copied: their output time is nil and the clock is not read
    // again. Writing into shared memory is a copy, and is timed.
    const t3 = call.writesSharedMemory ? this.scheduler.now() : t2;
    const queue = call.queueSeconds ?? 0;
    const infer = call.computeSeconds ?? (t2 - t1) / 1e3;
    const e = call.entry;
    const rows = call.decoded.rows;
    const st = this.#okStats;
    st.at = t3;
    st.total = (t3 - call.t0) / 1e3;
    st.queue = queue;
    st.input = (t1 - call.t0) / 1e3;
    st.infer = infer;
    st.output = (t3 - t2) / 1e3;
    e.stats.success(rows, st);
    const m = this.#okSample;
    m.model = e.name;
    m.batchRows = rows;
    m.totalUs = st.total * 1e6;
    m.queueUs = queue * 1e6;
    m.computeInputUs = st.input * 1e6;
    m.computeInferUs = infer * 1e6;
    m.computeOutputUs = st.output * 1e6;
    this.metrics.request(m);
    return { modelName: e.name, modelVersion: '1', id: call.id, outputs: wire };
  }

  /** Counts a failed request (once it reached a model) and gives the error to answer it with. */
  #failed(err: unknown, entry: Entry | undefined, rows: number, t0: number): ServeError {
    this.#inflight--;
    const e = toServeError(err);
    if (entry) {
      const total = (this.scheduler.now() - t0) / 1e3;
      entry.stats.failure(total);
      const reason =
        e.code === 'HLO_ERR_QUEUE_FULL' ||
        e.code === 'HLO_ERR_INVALID_ARGUMENT' ||
        e.code === 'HLO_ERR_DEADLINE_EXCEEDED'
          ? 'REJECTED'
          : e.code === 'HLO_ERR_CANCELLED'
            ? 'CANCELED'
            : e.code === 'HLO_ERR_RUNTIME'
              ? 'BACKEND'
              : 'OTHER';
      this.metrics.request({
        model: entry.name,
        ok: false,
        reason,
        batchRows: rows,
        totalUs: total * 1e6,
        queueUs: 0,
        computeInputUs: 0,
        computeInferUs: 0,
        computeOutputUs: 0,
      });
    }
    return e;
  }

  /** Stops taking requests; with drain, serves what is queued first. Then frees the device. */
  async stop(drain = true): Promise<void> {
    if (this.#stopping) return;
    this.#stopping = true;
    await this.scheduler.shutdown({ drain });
    for (const e of this.#entries.values()) e.compiled?.dispose();
    this.sharedMemory?.close();
    this.#backend.dispose();
    this.#backend.arena?.dispose();
    if (this.#ownsRuntime) this.runtime.dispose();
  }

  /** Grows the device arena's limit to hold a model of `weightBytes` beside the budget (never shrinks). */
  #fitArena(weightBytes: number): void {
    const arena = this.#backend.arena;
    if (arena === null || weightBytes <= this.#largestWeights) return;
    this.#largestWeights = weightBytes;
    arena.setLimit(arenaLimit(this.cache.budgetBytes, weightBytes));
  }

  /** Refreshes the gauges that are read at scrape time. */
  refreshGauges(): void {
    const s = this.cache.stats();
    this.metrics.residentBytes.set(s.residentBytes + s.pinnedBytes);
    const arena = this.#backend.arena?.disposed === false ? this.#backend.arena.stats() : undefined;
    if (arena !== undefined) {
      this.metrics.arenaBytes.set({ state: 'limit' }, arena.limitBytes);
      this.metrics.arenaBytes.set({ state: 'mapped' }, arena.mappedBytes);
      this.metrics.arenaBytes.set({ state: 'used' }, arena.usedBytes);
    }
    for (const m of s.models) this.metrics.modelResident.set({ model: m.model }, m.deviceResident ? 1 : 0);
    for (const n of this.scheduler.modelNames())
      this.metrics.queueDepth.set({ model: n }, this.scheduler.queueDepth(n));
  }
}
