import { join } from 'node:path';
import { type DeviceBuffer, Runtime } from '@hloserve/native';
import { type Bundle, loadBundle } from '../bundle/bundle.js';
import { discoverBundles, repositoryHasHooks, type DiscoveredBundle } from '../bundle/discover.js';
import { ParsedYamlStore } from '../bundle/parsed-yaml-store.js';
import type { WorkerSettings } from '../config/types.js';
import { assertSharedInputsIntact, type DecodedRequest, decodeRequest, readSharedInputs } from '../codec/decode.js';
import { encodeOutputs, writeSharedOutputs } from '../codec/encode.js';
import type { WireInferRequest, WireInferResponse, WireOutput } from '@hloserve/common/wire';
import { invalidArgument, quote, ServeError, toServeError } from '@hloserve/common/errors';
import type {
  InferContext,
  InferenceService,
  ModelConfigJson,
  ModelIndexEntry,
  ModelMetadata,
  ModelStatisticsJson,
  ServerMetadata,
} from '../transports/service.js';
import { SharedMemoryRegistry } from '../transports/shared-memory.js';
import type { Logger } from '../log.js';
import { Metrics, type RequestSample } from '../observability/metrics.js';
import type { ModelVersion, WeightSource } from '../model/model-version.js';
import { HookPool } from '../hooks/hook-pool.js';
import { HOOK_LOG_DEFAULTS, type HookLogSettings } from '../hooks/hook-log.js';
import type { HookContextData } from '../hooks/hook-protocol.js';
import {
  checkCallTensors,
  toHookTensor,
  toHostTensor as hostTensorOf,
  type HookTensors,
} from '../hooks/hook-tensor.js';
import { fromWireDatatype, toWireDatatype } from '../dtypes.js';
import { Lifecycle, modelOfWeightKey, type HookRuntime } from '../registry/lifecycle.js';
import { LifecycleEvents } from '../registry/lifecycle-events.js';
import { Policy } from '../registry/policy.js';
import { type ModelSlot, Registry } from '../registry/registry.js';
import { RepositoryWatcher } from '../registry/repository-watcher.js';
import { callOnce, type ExecutableCache, openExecutableCache } from '../device/executable-cache.js';
import { CompiledModel } from '../model/compiled-model.js';
import { Scheduler, type RequestTiming } from '../scheduler/scheduler.js';
import type { HostTensor } from '../tensor.js';
import { WeightCache } from '../weights/weight-cache.js';
import { weightBudget } from '../weights/weight-budget.js';
import { modelConfig, modelMetadata } from './model-views.js';
import { PjrtExecutor, type PjrtLease } from '../device/pjrt-executor.js';
import { arenaLimit, type HostWeights, PjrtWeightBackend } from '../weights/pjrt-weight-backend.js';

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

/** What a meta model's sub-calls add up to: the meta's queue and compute statistics. */
interface SubcallAccount {
  queueSeconds: number;
  computeSeconds: number;
}

/** One request from decode to answer. It is also the scheduler's timing record for that request. */
class InferCall implements RequestTiming {
  submittedAt: number | undefined = undefined;
  settledAt: number | undefined = undefined;
  queueSeconds: number | undefined = undefined;
  computeSeconds: number | undefined = undefined;
  batchSize: number | undefined = undefined;
  batchRows: number | undefined = undefined;

  readonly writesSharedMemory: boolean;
  /** A meta model's sub-call adds its queue and compute time here when it is answered. */
  account: SubcallAccount | null = null;

  constructor(
    readonly slot: ModelSlot,
    /** The version this request was admitted to; held until it is answered. */
    readonly version: ModelVersion,
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

/** Under cache_dir: the startup set's manifests as parsed (bundle/parsed-yaml-store.ts). */
const PARSED_YAML_FILE = 'parsed-manifests.json';

/**
 * One worker: one PJRT client on one device, the models of a repository, the scheduler and the
 * weight cache. It wires the parts together (the registry owns the models, the lifecycle changes
 * them, the scheduler queues and dispatches, the cache owns device weights) and implements the
 * transport-neutral InferenceService behind gRPC and HTTP.
 */
export class Worker implements InferenceService {
  readonly runtime: Runtime;
  readonly metrics = new Metrics();
  readonly sharedMemory: SharedMemoryRegistry | null;
  readonly limits: { readonly maxRecvBytes: number; readonly maxSendBytes: number };
  readonly scheduler: Scheduler<PjrtLease, ModelVersion>;
  readonly cache: WeightCache<HostWeights, readonly DeviceBuffer[], WeightSource>;
  readonly registry = new Registry();
  readonly events = new LifecycleEvents();
  readonly policy: Policy;
  readonly lifecycle: Lifecycle;
  readonly #backend: PjrtWeightBackend;
  readonly #settings: WorkerSettings;
  readonly #modelRepo: string;
  readonly #log: Logger;
  readonly #ownsRuntime: boolean;
  /** Where bundle hooks run; null when node.yaml refuses them. */
  readonly #hooks: HookRuntime | null;
  /** dynamic mode's repository watcher. */
  #watcher: RepositoryWatcher | null = null;
  #stopping = false;
  /** The startup set has loaded (begin()); not ready before. */
  #started = false;
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
    this.cache = new WeightCache<HostWeights, readonly DeviceBuffer[], WeightSource>({
      backend: this.#backend,
      budgetBytes,
      logger,
      onEvent: (e) => {
        if (e.type === 'load') this.metrics.weightLoad(modelOfWeightKey(e.model), e.bytes, e.seconds);
        else if (e.type === 'evict') {
          const model = modelOfWeightKey(e.model);
          this.metrics.weightEviction(model);
          // A replaced version's weights leaving is not news; a serving model losing its copy is.
          if (e.reason !== 'removed') this.events.emit({ type: 'evicted', model, bytes: e.bytes, reason: e.reason });
        }
      },
    });
    this.policy = new Policy(s.scheduler.models, s.modelControlMode === 'explicit' ? 'device' : 'system');
    this.metrics.trackInflight(() => this.#inflight);
    this.metrics.budgetBytes.set(Number.isFinite(budgetBytes) ? budgetBytes : -1);
    this.scheduler = new Scheduler<PjrtLease, ModelVersion>({
      executor: new PjrtExecutor(this.cache, { inline: runtime.platformName === 'cpu' }),
      // The request being dispatched is the only one this worker holds: no other is being decoded
      // or answered, so none waits while it runs inline.
      aloneOutsideQueue: () => this.#inflight <= 1,
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
          this.metrics.execution(e.model, e.batchSize, e.computeSeconds);
          this.registry.get(e.model)?.stats.execution(e.batchSize, e.computeSeconds);
        } else if (e.type === 'request-dropped') {
          this.metrics.shed.inc({ model: e.model, reason: e.reason });
        }
      },
    });
    const h = s.hooks;
    // The engine's requests in hand: with one, whose hook call was just handed over, the engine
    // waits for the answer on its own thread (HookPoolOptions.engineInFlight).
    const pool = (name: string) =>
      new HookPool({
        threads: h.threads,
        maxQueued: h.maxQueued,
        maxHeapMb: h.maxHeapMb,
        maxBufferMb: h.maxBufferMb,
        name,
        engineInFlight: () => this.#inflight,
        log: hookLogOf(o.log),
      });
    this.#hooks = h.enabled
      ? { pool: pool('hooks'), metaPool: pool('meta hooks'), limits: { timeoutMs: h.timeoutMs }, cacheDir: s.cacheDir }
      : null;
    this.lifecycle = new Lifecycle({
      runtime,
      registry: this.registry,
      policy: this.policy,
      scheduler: this.scheduler,
      cache: this.cache,
      events: this.events,
      metrics: this.metrics,
      log: o.log,
      defaults: { maxQueueDepth: s.scheduler.maxQueueDepth, maxQueueDelayUs: s.scheduler.maxQueueDelayUs },
      fitWeights: (bytes) => this.#fitArena(bytes),
      unloadGraceMs: s.modelUnloadGraceSeconds * 1000,
      hooks: this.#hooks,
      compile: (rt, src, sig, queued) => CompiledModel.compile(rt, src, sig, compileCache, queued),
    });
  }

  /**
   * The preprocess / postprocess pool's counters (benchmarks and tests): hand-overs to a thread,
   * notes back, hand-overs that had to wake a sleeping thread, lone calls whose answer the engine
   * waited for on its thread (and waits that ran out), threads replaced. Null when node.yaml
   * refuses hooks.
   */
  get hookPoolCounters(): {
    handoffs: number;
    wakes: number;
    laneNotes: number;
    waits: number;
    waitsRunOut: number;
    restarts: number;
  } | null {
    const p = this.#hooks?.pool;
    return p
      ? {
          handoffs: p.handoffs,
          wakes: p.wakes,
          laneNotes: p.laneNotes,
          waits: p.waits,
          waitsRunOut: p.waitsRunOut,
          restarts: p.restarts,
        }
      : null;
  }

  /** Creates a worker and loads its startup set of models (see begin()). */
  static async start(o: WorkerOptions): Promise<Worker> {
    const { worker, loaded } = await Worker.begin(o);
    await loaded;
    return worker;
  }

  /**
   * Creates a worker and starts loading the repository without waiting for it, so the caller can
   * open its listeners meanwhile (serve()). `loaded` settles once the startup set has (a model
   * that fails is recorded on its slot) and rejects only when the repository cannot be read;
   * serverReady() is false until it has settled, and dynamic mode's watcher starts after it.
   */
  static async begin(o: WorkerOptions): Promise<{ worker: Worker; loaded: Promise<void>; dispatched: Promise<void> }> {
    const rt = o.settings.runtime;
    // The repository's manifests and the compile cache's index are read while the runtime starts.
    const parsedYaml = ParsedYamlStore.open(join(o.settings.cacheDir, PARSED_YAML_FILE));
    const found = Worker.#startupBundles(o.modelRepo, o.settings, parsedYaml);
    const compileCache = openExecutableCache(o.settings, o.log);
    found?.catch(() => undefined);
    const runtime =
      o.runtime ??
      (await Runtime.create({
        plugin: rt.plugin,
        cpuDeviceCount: rt.cpuDeviceCount,
        cpuAsynchronous: rt.cpuAsynchronous,
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
      backgroundPriority: Runtime.backgroundPriority,
      buildNudgeMicros: Runtime.buildNudgeMicros,
      buildServingCpu: Runtime.buildServingCpu,
      buildConfinesServing: Runtime.buildConfinesServing,
      mallocMmapThreshold: Runtime.mallocMmapThreshold,
    });
    const w = new Worker(o, runtime, budget, await compileCache);
    let onDispatched!: () => void;
    const dispatched = new Promise<void>((resolve) => (onDispatched = resolve));
    const loaded = (async () => {
      try {
        await w.loadRepository(onDispatched, found);
      } finally {
        onDispatched();
      }
      // For the next start, written beside this one's serving (a store that cannot be written
      // costs that start its YAML parses, nothing else).
      void parsedYaml
        .then((store) => store.save())
        .catch((err: unknown) =>
          o.log.warn('parsed manifests not kept for the next start', { file: PARSED_YAML_FILE, error: String(err) }),
        );
      w.#started = true;
      if (o.settings.modelControlMode === 'dynamic' && !w.#stopping) w.#watchRepository();
    })();
    return { worker: w, loaded, dispatched };
  }

  /**
   * Starts a hook thread now when the startup set has hooks and node.yaml allows them, so that a
   * start's first hook thread boots while the engine is still loading (HookPool.preload); the
   * hooks pool takes it for its first thread, and loadRepository ends it if none did.
   */
  static preloadHookThread(modelRepo: string, settings: WorkerSettings, log?: Logger): void {
    const h = settings.hooks;
    if (!h.enabled || (settings.modelControlMode === 'explicit' && settings.modelsInclude.length === 0)) return;
    if (repositoryHasHooks(modelRepo, settings.modelsInclude))
      HookPool.preload({
        maxHeapMb: h.maxHeapMb,
        maxBufferMb: h.maxBufferMb,
        log: log ? hookLogOf(log) : HOOK_LOG_DEFAULTS,
      });
  }

  /** dynamic mode: the repository decides what is loaded (registry/repository-watcher.ts). */
  #watchRepository(): void {
    this.#watcher = new RepositoryWatcher({
      repo: this.#modelRepo,
      pollSeconds: this.#settings.modelPollSeconds,
      settleMs: this.#settings.modelSettleSeconds * 1000,
      include: this.#settings.modelsInclude,
      log: this.#log,
      actions: {
        load: (name) => this.#loadFromRepository(name),
        unload: (name) => this.lifecycle.unload(name),
        // A rename that cannot be done in place (the old model is gone meanwhile) still ends with
        // the new name loaded: unload the old name, load the new one.
        rename: (from, to) =>
          this.lifecycle.rename(from, to).catch(async (err: unknown) => {
            this.#log.warn('rename in place failed; unloading and loading instead', {
              from,
              to,
              error: toServeError(err).message,
            });
            await this.lifecycle.unload(from);
            await this.#loadFromRepository(to);
          }),
        loaded: () =>
          this.registry
            .list()
            .filter((s) => s.current !== null)
            .map((s) => ({ name: s.name, signature: s.current!.signature, directoryId: s.directoryId })),
      },
    });
    this.#watcher.start();
  }

  /**
   * Called once the server is ready: a start checks the meta models' hooks in the hooks pool (see
   * ModelHooks.load), so their own pool starts its thread now, after ready, not on the first call.
   */
  prestartHookThreads(): void {
    if (this.registry.list().some((s) => s.current?.bundle.kind === 'meta')) this.#hooks?.metaPool.prestart();
  }

  /** The repository watcher of dynamic mode, or null in the other modes. */
  get watcher(): RepositoryWatcher | null {
    return this.#watcher;
  }

  /** The startup set's bundles as found in the repository; null when there is none (explicit mode without models_include). */
  static #startupBundles(
    repo: string,
    settings: WorkerSettings,
    parsedYaml?: Promise<ParsedYamlStore>,
  ): Promise<DiscoveredBundle[]> | null {
    const include = settings.modelsInclude;
    if (settings.modelControlMode === 'explicit' && include.length === 0) return null;
    return discoverBundles(repo, { include, parsedYaml });
  }

  /**
   * Loads the startup set: every bundle of the repository (models_include applies) in static and
   * dynamic mode; in explicit mode only the models models_include names (none when it is empty).
   * One bad bundle stops none. `onDispatched` is called once every model's load has handed its
   * modules to the compiler (or ended before that).
   */
  async loadRepository(
    onDispatched?: () => void,
    discovered: Promise<DiscoveredBundle[]> | null = Worker.#startupBundles(this.#modelRepo, this.#settings),
  ): Promise<void> {
    if (discovered === null) return;
    const bundles: Bundle[] = [];
    for (const d of await discovered) {
      if (d.ok) {
        bundles.push(d.bundle);
        continue;
      }
      const slot = this.registry.ensure(d.name);
      slot.state = 'UNAVAILABLE';
      slot.reason = d.error.message;
      this.#log.error('bundle failed to load', { model: d.name, error: d.error.message });
      this.events.emit({ type: 'failed', model: d.name, error: d.error.message, stillServing: false });
    }
    // Side by side: compiles and executable loads queue on the runtime's background threads while
    // another model's files, weights and warmup proceed. A meta model's hooks load meanwhile, and
    // it checks the models it calls once they have loaded. A failure is recorded on its slot (the
    // lifecycle) and does not stop the others. `onDispatched` waits until every load has handed
    // its modules to the compiler: what the caller does next (serve() imports and starts the
    // console, long stretches of the JS thread) would otherwise hold the loads' file reads back.
    let toQueue = bundles.length;
    const queued = (): (() => void) =>
      callOnce(() => {
        if (--toQueue === 0) onDispatched?.();
      });
    let startupLoaded!: () => void;
    const warmAfter = new Promise<void>((resolve) => (startupLoaded = resolve));
    const load = (b: Bundle, callees?: Promise<unknown>) =>
      this.lifecycle.load(b, undefined, { callees, onQueued: queued(), warmAfter }).catch(() => undefined);
    const models = Promise.all(bundles.filter((b) => b.kind !== 'meta').map((b) => load(b)));
    const metas = Promise.all(bundles.filter((b) => b.kind === 'meta').map((b) => load(b, models)));
    if (toQueue === 0) onDispatched?.();
    try {
      await Promise.all([models, metas]);
    } finally {
      startupLoaded();
      HookPool.discardPreloaded();
    }
  }

  // ---- InferenceService ----------------------------------------------------------------------

  serverLive(): boolean {
    return true;
  }

  serverReady(): boolean {
    return !this.#stopping && this.#started && this.registry.list().some((e) => e.state === 'READY');
  }

  serverMetadata(): ServerMetadata {
    return { name: SERVER_NAME, version: SERVER_VERSION, extensions: EXTENSIONS };
  }

  /** The version serving `name` now (metadata, config), or why there is none. */
  #serving(name: string, version: string): ModelVersion {
    const slot = this.registry.require(name, version);
    if (slot.current === null)
      throw new ServeError('HLO_ERR_MODEL_NOT_READY', `model ${quote(name)} is not loaded: ${slot.reason}`);
    return slot.current;
  }

  modelReady(name: string, version: string): boolean {
    try {
      return this.registry.require(name, version).admit() !== undefined;
    } catch {
      return false;
    }
  }

  modelMetadata(name: string, version: string): ModelMetadata {
    return modelMetadata(this.#serving(name, version).bundle, this.runtime.platformName);
  }

  modelConfig(name: string, version: string): ModelConfigJson {
    const v = this.#serving(name, version);
    return modelConfig(
      v.bundle,
      v.io.maxRows,
      v.batchSizes,
      v.scheduling.maxQueueDelayUs ?? 0,
      this.runtime.platformName,
    );
  }

  modelStatistics(name: string, version: string): ModelStatisticsJson[] {
    const list = name ? [this.registry.require(name, version)] : this.registry.list();
    return list.map((e) => {
      const w = e.current?.weights;
      return e.stats.json(e.name, '1', w?.bytes ?? 0, w !== undefined && this.cache.isResident(w.key));
    });
  }

  repositoryIndex(readyOnly: boolean): ModelIndexEntry[] {
    return this.registry
      .list()
      .filter((e) => !readyOnly || e.state === 'READY')
      .map((e) => ({ name: e.name, version: '1', state: e.state, reason: e.reason }));
  }

  async loadModel(name: string, signal?: AbortSignal): Promise<void> {
    this.#refuseInStatic('load');
    await this.#loadFromRepository(name, signal);
  }

  /** Reads `name`'s bundle from the repository and loads it as the model's next version. */
  async #loadFromRepository(name: string, signal?: AbortSignal): Promise<void> {
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name)) throw invalidArgument(`${quote(name)} is not a valid model name`);
    let bundle: Bundle;
    try {
      bundle = await loadBundle(join(this.#modelRepo, name));
    } catch (err) {
      const e = toServeError(err);
      if (
        (err as { cause?: { code?: string } }).cause?.code === 'ENOENT' ||
        /ENOENT|no such file|not found/i.test(e.message)
      ) {
        throw new ServeError('HLO_ERR_MODEL_NOT_FOUND', `no bundle named ${quote(name)} in the model repository`);
      }
      // A bundle that does not even parse is a failed load like any other: visible, and the
      // version serving (if any) stays.
      throw await this.lifecycle.failed(name, e);
    }
    await this.lifecycle.load(bundle, signal);
  }

  unloadModel(name: string): Promise<void> {
    try {
      this.#refuseInStatic('unload');
    } catch (err) {
      return Promise.reject(err);
    }
    return this.lifecycle.unload(name);
  }

  /** static mode serves the startup set: the repository RPCs change nothing there. */
  #refuseInStatic(what: 'load' | 'unload'): void {
    if (this.#settings.modelControlMode !== 'static') return;
    throw new ServeError(
      'HLO_ERR_FAILED_PRECONDITION',
      `model ${what} is not allowed: global.model_control_mode is static (use dynamic or explicit)`,
    );
  }

  /** The worker's model control mode (node.yaml's global.model_control_mode). */
  get modelControlMode(): WorkerSettings['modelControlMode'] {
    return this.#settings.modelControlMode;
  }

  /** Where bundles are read from. */
  get modelRepo(): string {
    return this.#modelRepo;
  }

  /**
   * Decodes and queues a request; its answer comes from the scheduler's promise. Not an async
   * function: the request's state lives in one InferCall that also serves as the scheduler's timing
   * record, where an async frame held every local of the whole path (measured with V8's sampling
   * heap profiler, bench/RESULTS.md session 6).
   */
  infer(req: WireInferRequest, ctx: InferContext): Promise<WireInferResponse> {
    return this.#infer(req, ctx, null);
  }

  /** infer(), with the meta model's account a sub-call's time is added to (null for a client's request). */
  #infer(req: WireInferRequest, ctx: InferContext, account: SubcallAccount | null): Promise<WireInferResponse> {
    // Every reading is the scheduler's clock (epoch ms), and the scheduler's own readings at submit
    // and settle stand in for the rest: two clock reads per request instead of six.
    const t0 = this.scheduler.now();
    let slot: ModelSlot | undefined;
    let version: ModelVersion | undefined;
    let rows = 0;
    this.#inflight++;
    let call: InferCall;
    try {
      if (this.#stopping) throw new ServeError('HLO_ERR_SHUTTING_DOWN', 'the server is shutting down');
      const cap = this.#settings.endpoints.maxConcurrentRequests;
      if (cap > 0 && this.#inflight > cap && ctx.nested !== true) {
        throw new ServeError(
          'HLO_ERR_OVERLOADED',
          `more than ${cap} requests in flight (endpoints.max_concurrent_requests)`,
        );
      }
      slot = this.registry.require(req.modelName, req.modelVersion);
      // Admission: the request captures the version serving now and holds it until answered.
      version = slot.admit();
      version.hold();
      const decoded = decodeRequest(version.io, req, this.sharedMemory);
      rows = decoded.rows;
      if (ctx.deadline !== null && ctx.deadline <= t0) {
        throw new ServeError('HLO_ERR_DEADLINE_EXCEEDED', 'the deadline passed before the request was queued');
      }
      call = new InferCall(slot, version, decoded, req.id, t0);
      call.account = account;
    } catch (err) {
      return Promise.reject(this.#failed(err, slot, version, rows, t0));
    }
    // Shared-memory inputs are copied in on the addon's threads first; inline ones are already here.
    if (call.decoded.sharedInputs.length === 0) {
      return call.version.hooks !== null ? this.#inferWithHooks(call, req, ctx) : this.#submit(call, ctx);
    }
    return readSharedInputs(call.version.io, call.decoded, this.sharedMemory!).then(
      () => (call.version.hooks !== null ? this.#inferWithHooks(call, req, ctx) : this.#submit(call, ctx)),
      (err: unknown) => {
        throw this.#failed(err, call.slot, call.version, call.decoded.rows, call.t0);
      },
    );
  }

  #submit(call: InferCall, ctx: InferContext): Promise<WireInferResponse> {
    return this.scheduler
      .submit(call.slot.queue, call.decoded.inputs, {
        deadline: ctx.deadline,
        signal: ctx.signal,
        timing: call,
        version: call.version,
        nested: ctx.nested === true,
      })
      .then(
        (outputs) => {
          if (call.decoded.sharedInputs.length > 0) this.#checkSharedInputs(call);
          return call.writesSharedMemory ? this.#answerShared(call, outputs) : this.#answer(call, outputs);
        },
        (err: unknown) => {
          throw this.#failed(err, call.slot, call.version, call.decoded.rows, call.t0);
        },
      );
  }

  /** Shared-memory inputs are read in place: one truncated under the execution fails the request. */
  #checkSharedInputs(call: InferCall): void {
    try {
      assertSharedInputsIntact(call.decoded, this.sharedMemory!);
    } catch (err) {
      throw this.#failed(err, call.slot, call.version, call.decoded.rows, call.t0);
    }
  }

  /** Writes the shared-memory outputs (on the addon's threads), then answers. */
  async #answerShared(call: InferCall, outputs: readonly HostTensor[]): Promise<WireInferResponse> {
    try {
      await writeSharedOutputs(call.decoded.outputs, outputs, this.sharedMemory!);
    } catch (err) {
      throw this.#failed(err, call.slot, call.version, call.decoded.rows, call.t0);
    }
    return this.#answer(call, outputs);
  }

  /**
   * The path of a model with hooks: preprocess, the executable, postprocess; or a meta model's
   * run, whose sub-model calls come back through infer(). Kept apart so that models without hooks
   * pay nothing for them.
   */
  async #inferWithHooks(call: InferCall, req: WireInferRequest, ctx: InferContext): Promise<WireInferResponse> {
    const v = call.version;
    const hooks = v.hooks!;
    const context: HookContextData = {
      model: v.name,
      requestId: req.id,
      parameters: req.parameters,
      deadline: ctx.deadline,
    };
    let outputs: readonly HostTensor[];
    try {
      if (v.isMeta) {
        // The meta counts as one request whose queue and compute are its sub-calls' sums; the
        // rest of its time (its run hook) shows only in its total.
        const account: SubcallAccount = { queueSeconds: 0, computeSeconds: 0 };
        outputs = await hooks.run(call.decoded.inputs, context, (model, tensors) =>
          this.#subcall(v, req.id, model, tensors, ctx, account),
        );
        call.submittedAt = call.t0;
        call.settledAt = this.scheduler.now();
        call.queueSeconds = account.queueSeconds;
        call.computeSeconds = account.computeSeconds;
      } else {
        // With other requests in flight, those read in the same loop turn share the hand-over.
        const inputs = hooks.hasPreprocess
          ? await hooks.preprocess(call.decoded.inputs, context, this.#inflight > 1)
          : call.decoded.inputs;
        checkRows(v, inputs);
        const raw = await this.scheduler.submit(call.slot.queue, inputs, {
          deadline: ctx.deadline,
          signal: ctx.signal,
          timing: call,
          version: v,
          nested: ctx.nested === true,
        });
        outputs = hooks.hasPostprocess ? await hooks.postprocess(raw, context) : raw;
      }
    } catch (err) {
      throw this.#failed(err, call.slot, v, call.decoded.rows, call.t0);
    }
    if (call.decoded.sharedInputs.length > 0) this.#checkSharedInputs(call);
    return call.writesSharedMemory ? this.#answerShared(call, outputs) : this.#answer(call, outputs);
  }

  /** A meta model's call to a sub-model: through infer() like any request, hooks and checks included. */
  async #subcall(
    meta: ModelVersion,
    parentId: string,
    model: string,
    tensors: HookTensors,
    ctx: InferContext,
    account: SubcallAccount,
  ): Promise<HookTensors> {
    if (!meta.bundle.manifest.metaCalls.includes(model))
      throw new ServeError(
        'HLO_ERR_HOOK_FAILED',
        `meta model '${meta.name}' called ${quote(model)}, which its meta.calls does not declare`,
      );
    if (this.registry.get(model)?.current?.isMeta)
      throw new ServeError('HLO_ERR_HOOK_FAILED', `meta model '${meta.name}' called '${model}', another meta model`);
    // What run() passes is the hook's: checked for form before it becomes a request.
    const checked = checkCallTensors(`meta model '${meta.name}' call to '${model}'`, tensors);
    const inputs = Object.entries(checked).map(([name, t]) => {
      const host = hostTensorOf(name, t);
      return {
        name,
        datatype: toWireDatatype(host.dtype),
        shape: host.shape,
        parameters: {},
        data: { kind: 'raw' as const, bytes: host.data },
      };
    });
    const res = await this.#infer(
      { modelName: model, modelVersion: '', id: `${parentId}/${model}`, parameters: {}, inputs, outputs: [] },
      { deadline: ctx.deadline, signal: ctx.signal, nested: true },
      account,
    );
    const out: Record<string, ReturnType<typeof toHookTensor>> = {};
    for (const o of res.outputs) {
      const dtype = fromWireDatatype(o.datatype);
      if (dtype === undefined || o.data === null) continue;
      out[o.name] = toHookTensor({ name: o.name, dtype, shape: o.shape, data: o.data });
    }
    return out;
  }

  #answer(call: InferCall, outputs: readonly HostTensor[]): WireInferResponse {
    let wire: WireOutput[];
    try {
      wire = encodeOutputs(call.decoded.outputs, outputs, this.sharedMemory);
    } catch (err) {
      throw this.#failed(err, call.slot, call.version, call.decoded.rows, call.t0);
    }
    this.#inflight--;
    call.version.release();
    const t1 = call.submittedAt ?? call.t0;
    const t2 = call.settledAt ?? t1;
    // Inline outputs are wrapped, not copied: their output time is nil and the clock is not read
    // again. Writing into shared memory is a copy, and is timed.
    // A postprocess is the request's output step, and a meta's run its whole body: both are timed.
    const t3 = call.writesSharedMemory || call.version.hooks !== null ? this.scheduler.now() : t2;
    const queue = call.queueSeconds ?? 0;
    const infer = call.computeSeconds ?? (t2 - t1) / 1e3;
    if (call.account !== null) {
      call.account.queueSeconds += queue;
      call.account.computeSeconds += infer;
    }
    const e = call.slot;
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
    m.model = call.version.name;
    m.batchRows = rows;
    m.totalUs = st.total * 1e6;
    m.queueUs = queue * 1e6;
    m.computeInputUs = st.input * 1e6;
    m.computeInferUs = infer * 1e6;
    m.computeOutputUs = st.output * 1e6;
    this.metrics.request(m);
    return { modelName: call.version.name, modelVersion: '1', id: call.id, outputs: wire };
  }

  /** Counts a failed request (once it reached a model) and gives the error to answer it with. */
  #failed(
    err: unknown,
    entry: ModelSlot | undefined,
    version: ModelVersion | undefined,
    rows: number,
    t0: number,
  ): ServeError {
    this.#inflight--;
    version?.release();
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
        model: version?.name ?? entry.name,
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

  /**
   * A stop that should not wait any more (a second signal): queued requests fail now, and so do
   * the hook calls in flight (their threads are ended), so that the versions they hold are freed.
   */
  hurryStop(): void {
    void this.scheduler.shutdown({ drain: false });
    void this.#hooks?.pool.close();
    void this.#hooks?.metaPool.close();
  }

  /** Where a stop is (a stop that takes long says it), or null before stop() and after it. */
  stopStage: string | null = null;

  /** Stops taking requests; with drain, serves what is queued first. Then frees the device. */
  async stop(drain = true): Promise<void> {
    if (this.#stopping) return;
    this.#stopping = true;
    this.stopStage = 'repository watcher';
    await this.#watcher?.close();
    this.stopStage = drain ? 'scheduler: draining queued and running work' : 'scheduler: running work';
    await this.scheduler.shutdown({ drain });
    for (const slot of this.registry.list()) {
      const v = slot.current;
      slot.current = null;
      if (v) this.stopStage = `model ${quote(v.name)}: its requests in hand (${v.holds} when the stop reached it)`;
      await v?.retire();
    }
    this.compileCache?.flushRuns();
    this.stopStage = 'hook threads';
    await Promise.all([this.#hooks?.pool.close(), this.#hooks?.metaPool.close()]);
    this.stopStage = 'device';
    this.sharedMemory?.close();
    this.#backend.dispose();
    this.#backend.arena?.dispose();
    if (this.#ownsRuntime) this.runtime.dispose();
    this.stopStage = null;
  }

  /** Grows the device arena's limit to hold a model of `weightBytes` beside the budget (never shrinks). */
  #fitArena(weightBytes: number): void {
    const arena = this.#backend.arena;
    if (arena === null || weightBytes <= this.#largestWeights) return;
    this.#largestWeights = weightBytes;
    arena.setLimit(arenaLimit(this.cache.budgetBytes, weightBytes));
  }

  /** The device arena's counters, or null without one (the control API's device memory view). */
  arenaStats(): { readonly limitBytes: number; readonly mappedBytes: number; readonly usedBytes: number } | null {
    const arena = this.#backend.arena;
    return arena !== null && !arena.disposed ? arena.stats() : null;
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
    for (const slot of this.registry.list()) {
      const w = slot.current?.weights;
      if (w !== undefined) this.metrics.modelResident.set({ model: slot.name }, this.cache.isResident(w.key) ? 1 : 0);
    }
    for (const q of this.scheduler.queues()) {
      const depth = this.scheduler.queueDepth(q);
      this.metrics.queueDepth.set({ model: q.name }, depth);
      // Triton's pending count is the requests waiting to execute: the queue, under its name.
      this.metrics.pending.set({ model: q.name, version: '1' }, depth);
    }
  }
}

/** A hook's preprocess result may not carry more rows than the largest compiled batch takes. */
function checkRows(v: ModelVersion, inputs: readonly HostTensor[]): void {
  const spec = v.bundle.manifest.executableInputs[0];
  const axis = spec?.wireBatchAxis;
  if (axis === null || axis === undefined) return;
  const rows = inputs[0]?.shape[axis] ?? 0;
  if (rows < 1 || rows > v.io.maxRows)
    throw new ServeError(
      'HLO_ERR_HOOK_FAILED',
      `preprocess of '${v.name}' produced ${rows} rows; the model takes 1 to ${v.io.maxRows}`,
    );
}

/** The engine's level and fields, for hook threads to log as it does. */
function hookLogOf(log: Logger): HookLogSettings {
  return { level: log.level, fields: log.fields };
}
