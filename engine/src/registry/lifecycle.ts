import type { DeviceBuffer, Runtime } from '@hloserve/native';
import { ServeError, toServeError } from '@hloserve/common/errors';
import { setClampedTimeout } from '@hloserve/common/timers';
import type { Bundle } from '../bundle/bundle.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../observability/metrics.js';
import { CompiledModel, type ModelSource } from '../model/compiled-model.js';
import { ModelBuild, ModelVersion } from '../model/model-version.js';
import { resolveModelInfo, type ModelSchedulingInfo } from '../scheduler/model-info.js';
import type { Scheduler } from '../scheduler/scheduler.js';
import type { WeightCache } from '../weights/weight-cache.js';
import { modelIO } from '../worker/model-views.js';
import type { HookPool } from '../hooks/hook-pool.js';
import { ModelHooks, type HookLimits } from '../hooks/model-hooks.js';
import type { PjrtLease } from '../device/pjrt-executor.js';
import type { HostWeights } from '../weights/pjrt-weight-backend.js';
import type { WeightSource } from '../model/model-version.js';
import { readBundleFile } from '../bundle/bundle-file.js';
import { bundleSignature } from './bundle-signature.js';
import type { LifecycleEvents } from './lifecycle-events.js';
import type { Policy } from './policy.js';
import type { ModelSlot, Registry } from './registry.js';

export interface LifecycleDeps {
  readonly runtime: Runtime;
  readonly registry: Registry;
  readonly policy: Policy;
  readonly scheduler: Scheduler<PjrtLease, ModelVersion>;
  readonly cache: WeightCache<HostWeights, readonly DeviceBuffer[], WeightSource>;
  readonly events: LifecycleEvents;
  readonly metrics: Metrics;
  readonly log: Logger;
  readonly defaults: { readonly maxQueueDepth: number; readonly maxQueueDelayUs: number };
  /** Called before a version's weights join the cache (the device arena grows to fit them). */
  readonly fitWeights?: (bytes: number) => void;
  /** How long an unload lets queued requests finish before answering them NOT_FOUND. */
  readonly unloadGraceMs: number;
  /** Where bundle hooks run; null when node.yaml refuses hooks (hooks.enabled: false). */
  readonly hooks: HookRuntime | null;
  /**
   * How a version's modules become executables; default CompiledModel.compile. The worker passes
   * one that goes through its compiled-executable cache.
   */
  readonly compile?: (
    runtime: Runtime,
    src: ModelSource,
    signal?: AbortSignal,
    queued?: () => void,
  ) => Promise<CompiledModel>;
}

/** The pools hook calls run in and their limits. Meta models' run() has its own pool, so a
 * pipeline waiting on its sub-models never holds the threads their own hooks need. */
export interface HookRuntime {
  readonly pool: HookPool;
  readonly metaPool: HookPool;
  readonly limits: HookLimits;
  /** Where transpiled TypeScript hooks are kept. */
  readonly cacheDir: string;
}

/** What a start passes to each load of its startup set. */
export interface StartupLoad {
  /**
   * For a meta model: what its check of the models it calls waits for once its hooks have loaded
   * (a start loads a meta model's hooks beside the models it calls, and checks them once they have
   * loaded).
   */
  readonly callees?: Promise<unknown>;
  /**
   * Called once this load has handed its modules to the compiler (cache loads and compiles are on
   * their way to the addon's threads), or has ended before that; a meta model's at once. It may
   * be called more than once (wrap it in callOnce).
   */
  readonly onQueued?: () => void;
  /**
   * What the sizes warmed after the swap wait for: the rest of the startup set. Warmed at once,
   * they took the addon's and XLA's threads from the loads of the models still to come, on the
   * way to the server's ready (bench/RESULTS.md, session 15).
   */
  readonly warmAfter?: Promise<unknown>;
}

const NO_WEIGHTS: WeightSource = { path: null, argumentOrder: [] };

/** Where a build's time went (the `model ready` / `model reloaded` log line): module files (a meta model: its hooks), compile or cache load, weights, warmup. A model's hooks load beside these. */
interface BuildPhases {
  readSeconds: number;
  compileSeconds: number;
  weightsSeconds: number;
  warmupSeconds: number;
}

/** The weight cache's key for a build's weights: one per build, so two versions never share a copy by accident. */
function weightKey(name: string, generation: number): string {
  return `${name}@${generation}`;
}

/** The model a weight key belongs to (metrics label it by model). */
export function modelOfWeightKey(key: string): string {
  const at = key.lastIndexOf('@');
  return at < 0 ? key : key.slice(0, at);
}

/**
 * How models change while serving. A load or reload builds the new version beside the current
 * one (read, compile on the addon's threads, weights into the cache, warmup), then swaps it in
 * one step; requests admitted before finish on the version they captured, which is freed once
 * they have. Operations on one name run one after another; other names are never blocked.
 */
export class Lifecycle {
  readonly #d: LifecycleDeps;
  readonly #serial = new Map<string, Promise<unknown>>();
  #generation = 0;

  constructor(deps: LifecycleDeps) {
    this.#d = deps;
  }

  /** Runs `fn` after every earlier operation on `name` has settled. */
  serialized<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.#serial.get(name) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const tail = next.catch(() => undefined);
    this.#serial.set(name, tail);
    void tail.then(() => {
      if (this.#serial.get(name) === tail) this.#serial.delete(name);
    });
    return next;
  }

  nextGeneration(): number {
    return ++this.#generation;
  }

  /**
   * Loads `bundle` as its model's new version. With a version serving, that one keeps serving
   * throughout and stays if this fails (the slot's reason says why); without one the slot is
   * UNAVAILABLE on failure. Rejects with the failure either way. `start`: what a start adds for a
   * model of its startup set (StartupLoad).
   */
  load(bundle: Bundle, signal?: AbortSignal, start?: StartupLoad): Promise<ModelVersion> {
    return this.serialized(bundle.name, () => this.#loadNow(bundle, signal, start));
  }

  async #loadNow(bundle: Bundle, signal?: AbortSignal, start?: StartupLoad): Promise<ModelVersion> {
    const d = this.#d;
    const name = bundle.name;
    const slot = d.registry.ensure(name);
    const previous = slot.current;
    if (previous === null) slot.state = 'LOADING';
    const started = performance.now();
    this.#emit({ type: 'loading', model: name, reason: previous === null ? 'load' : 'reload' });
    const sig = await bundleSignature(bundle.dir).catch(() => null);
    slot.attemptedSignature = sig?.files ?? '';
    if (sig !== null) slot.directoryId = sig.directoryId;
    let version: ModelVersion;
    let costs: ReadonlyMap<number, number>;
    const phases: BuildPhases = { readSeconds: 0, compileSeconds: 0, weightsSeconds: 0, warmupSeconds: 0 };
    try {
      ({ version, costs } = await this.#build(bundle, sig?.files ?? '', signal, phases, start));
    } catch (err) {
      throw this.#fail(slot, toServeError(err));
    } finally {
      start?.onQueued?.();
    }
    // The swap: one synchronous step, so a request is admitted either before (old) or after (new).
    // A meta model is never queued itself: its sub-models are.
    const info = version.scheduling;
    if (version.isMeta) {
      if (slot.queue !== null) d.scheduler.removeModel(slot.queue);
      slot.queue = null;
    } else {
      if (slot.queue !== null) d.scheduler.replaceModel(slot.queue, info, version);
      else slot.queue = d.scheduler.addModel(info, version);
      for (const [b, s] of costs) d.scheduler.seedCost(slot.queue, b, s);
    }
    slot.current = version;
    slot.state = 'READY';
    slot.reason = '';
    void this.#warmAfterServing(version, start?.warmAfter);
    const seconds = +((performance.now() - started) / 1e3).toFixed(3);
    if (previous !== null) {
      void previous.retire();
      this.#emit({
        type: 'reloaded',
        model: name,
        generation: version.generation,
        previousGeneration: previous.generation,
        batchSizes: version.batchSizes,
        seconds,
      });
    } else {
      this.#emit({
        type: 'loaded',
        model: name,
        generation: version.generation,
        batchSizes: version.batchSizes,
        weightBytes: version.weights.bytes,
        seconds,
      });
    }
    d.log.info(previous ? 'model reloaded' : 'model ready', {
      model: name,
      generation: version.generation,
      batchSizes: version.batchSizes,
      weightBytes: version.weights.bytes,
      residency: version.policy.residency,
      loadSeconds: seconds,
      ...phases,
    });
    return version;
  }

  /**
   * The sizes loaded from the compile cache that were not warmed before the swap, warmed on the
   * background threads once `after` has settled (a start: its whole startup set has loaded), or at
   * once (requests at those sizes meanwhile pay the first-run cost themselves). The version is held
   * throughout, so a reload or unload frees it only after; one no longer serving by then is not
   * warmed.
   */
  async #warmAfterServing(version: ModelVersion, after?: Promise<unknown>): Promise<void> {
    const compiled = version.build.compiled;
    const sizes = compiled?.warmAfterServing ?? [];
    if (compiled === null || sizes.length === 0) return;
    const d = this.#d;
    version.hold();
    try {
      await after;
      if (d.registry.get(version.name)?.current !== version) return;
      const lease = await d.cache.acquire(version.build.weights.key);
      try {
        const costs = await compiled.warmup(lease.weights, sizes);
        // Seeded only while this version serves: a newer one has costs of its own.
        const slot = d.registry.get(version.name);
        if (slot?.current === version && slot.queue !== null)
          for (const [b, s] of costs) d.scheduler.seedCost(slot.queue, b, s);
      } finally {
        lease.release();
      }
    } catch (err) {
      d.log.warn('warmup after serving failed', {
        model: version.name,
        generation: version.generation,
        batchSizes: sizes,
        error: toServeError(err).message,
      });
    } finally {
      version.release();
    }
  }

  /**
   * Records a load that failed before it could start (the bundle did not parse): the slot says
   * why, and a version serving keeps serving. Returns the error to throw.
   */
  failed(name: string, error: ServeError): Promise<ServeError> {
    return this.serialized(name, async () => this.#fail(this.#d.registry.ensure(name), error));
  }

  #fail(slot: ModelSlot, e: ServeError): ServeError {
    const previous = slot.current;
    if (previous !== null) {
      slot.reason = `reload failed, version ${previous.generation} still serving: ${e.message}`;
      slot.state = 'READY';
    } else {
      slot.state = 'UNAVAILABLE';
      slot.reason = e.message;
    }
    this.#d.log.error(previous ? 'model reload failed; the previous version keeps serving' : 'model failed to load', {
      model: slot.name,
      error: e.message,
    });
    this.#emit({ type: 'failed', model: slot.name, error: e.message, stillServing: previous !== null });
    return e;
  }

  /** Reads, compiles and warms a version; nothing of it is visible to requests until the swap. */
  async #build(
    bundle: Bundle,
    signature: string,
    signal: AbortSignal | undefined,
    phases: BuildPhases,
    start?: StartupLoad,
  ): Promise<{ version: ModelVersion; costs: ReadonlyMap<number, number> }> {
    const d = this.#d;
    const name = bundle.name;
    if (bundle.notServable) throw new ServeError('HLO_ERR_BUNDLE_INVALID', bundle.notServable);
    let t = performance.now();
    const lap = (): number => {
      const now = performance.now();
      const s = +((now - t) / 1e3).toFixed(3);
      t = now;
      return s;
    };
    if (bundle.kind === 'meta') {
      start?.onQueued?.();
      const hooks = await this.#loadHooks(bundle);
      phases.readSeconds = lap();
      await start?.callees;
      return this.#buildMeta(bundle, hooks!, signature);
    }
    // A model's hooks load in their pool's thread (a fresh thread starts first) while its modules
    // are read, loaded or compiled, its weights uploaded and warmed: the two share nothing until
    // the version is made, and one after the other made a hooked model the last of a start to
    // serve (bench/RESULTS.md, session 12).
    const hooksLoading = this.#loadHooks(bundle);
    hooksLoading.catch(() => undefined);
    const modules = new Map<number, Uint8Array>();
    await Promise.all(bundle.modules.map(async (m) => modules.set(m.batchSize, await readBundleFile(m.path))));
    phases.readSeconds = lap();
    const weights = (bundle.weights?.tensors ?? []).map((t) => ({ name: t.name, dtype: t.dtype, shape: t.shape }));
    const compile = d.compile ?? ((rt, src, sig, queued) => CompiledModel.compile(rt, src, sig, null, queued));
    const compiled = await compile(
      d.runtime,
      { name, manifest: bundle.manifest, modules, weights },
      signal,
      start?.onQueued,
    );
    phases.compileSeconds = lap();
    d.metrics.compiles.inc({ model: name }, modules.size);
    const generation = this.nextGeneration();
    const key = weightKey(name, generation);
    const bytes = bundle.weights?.byteLength ?? 0;
    const source: WeightSource = {
      path: bundle.weights?.path ?? null,
      argumentOrder: bundle.weights?.argumentOrder ?? [],
    };
    let inCache = false;
    try {
      const policy = d.policy.resolve(name);
      const scheduling: ModelSchedulingInfo = {
        name,
        compiledBatchSizes: compiled.batchSizes,
        maxBatchSize: policy.maxBatchSize,
        weight: policy.weight,
        inputBatchAxes: bundle.manifest.executableInputs.map((s) => s.wireBatchAxis),
        outputBatchAxes: bundle.manifest.executableOutputs.map((s) => s.wireBatchAxis),
        maxQueueDelayUs: policy.maxQueueDelayUs ?? d.defaults.maxQueueDelayUs,
      };
      const resolved = resolveModelInfo(scheduling, d.defaults);
      const maxRows = resolved.cap !== null ? Math.min(resolved.cap, resolved.maxRows) : resolved.maxRows;
      d.fitWeights?.(bytes);
      inCache = true;
      await d.cache.addModel({ name: key, bytes, residency: policy.residency, source });
      // Warmup proves the modules run with these weights and seeds the cost table: every size
      // compiled now, and of those loaded from the compile cache at most one, none where an earlier
      // start ran them all with these types (the rest warm after the swap; until then the costs
      // that start recorded stand in).
      const lease = await d.cache.acquire(key);
      phases.weightsSeconds = lap();
      const costs = compiled.recordedCosts;
      try {
        for (const [b, s] of await compiled.warmup(lease.weights, compiled.warmBeforeServing)) costs.set(b, s);
      } finally {
        lease.release();
      }
      phases.warmupSeconds = lap();
      const hooks = await hooksLoading;
      const build = new ModelBuild(
        compiled,
        { key, source, bytes },
        () => {
          d.cache.removeModel(key);
          compiled.dispose();
        },
        hooks,
      );
      const version = new ModelVersion({
        name,
        generation,
        bundle,
        build,
        io: modelIO(bundle, maxRows),
        scheduling,
        policy,
        signature,
      });
      return { version, costs };
    } catch (err) {
      if (inCache) d.cache.removeModel(key);
      compiled.dispose();
      throw err;
    }
  }

  /**
   * The bundle's hooks module, imported once in the pool; null without hooks. A server that refuses
   * hooks throws at once (not from the promise), so such a bundle is refused before anything of it
   * is read or compiled.
   */
  #loadHooks(bundle: Bundle): Promise<ModelHooks | null> {
    if (!bundle.hooks) return Promise.resolve(null);
    const rt = this.#d.hooks;
    if (rt === null)
      throw new ServeError(
        'HLO_ERR_BUNDLE_INVALID',
        `${bundle.hooks.path}: this server refuses bundle hooks (hooks.enabled: false in node.yaml)`,
      );
    const pool = bundle.kind === 'meta' ? rt.metaPool : rt.pool;
    return ModelHooks.load(bundle, pool, rt.cacheDir, rt.limits, rt.pool);
  }

  /**
   * A meta model's version: its run hook and the models it may call, nothing to compile or load.
   * A meta may not call another meta (nor itself: the bundle loader refuses that).
   */
  #buildMeta(
    bundle: Bundle,
    hooks: ModelHooks,
    signature: string,
  ): { version: ModelVersion; costs: ReadonlyMap<number, number> } {
    const d = this.#d;
    const name = bundle.name;
    for (const callee of bundle.manifest.metaCalls) {
      if (d.registry.get(callee)?.current?.isMeta)
        throw new ServeError(
          'HLO_ERR_BUNDLE_INVALID',
          `${bundle.manifest.file}: meta.calls names "${callee}", which is a meta model; a meta model may call only models`,
        );
    }
    const policy = d.policy.resolve(name);
    const generation = this.nextGeneration();
    const build = new ModelBuild(
      null,
      { key: weightKey(name, generation), source: NO_WEIGHTS, bytes: 0 },
      () => {},
      hooks,
    );
    const scheduling: ModelSchedulingInfo = {
      name,
      compiledBatchSizes: [],
      maxBatchSize: policy.maxBatchSize,
      weight: policy.weight,
      inputBatchAxes: [],
      outputBatchAxes: [],
      maxQueueDelayUs: 0,
    };
    // A meta request's rows are bounded by what its sub-models take, which they check themselves.
    const version = new ModelVersion({
      name,
      generation,
      bundle,
      build,
      io: modelIO(bundle, Number.MAX_SAFE_INTEGER),
      scheduling,
      policy,
      signature,
    });
    return { version, costs: new Map() };
  }

  /**
   * Unloads a model: new requests are refused at once (NOT_FOUND), queued ones get up to the
   * grace to finish, then whatever is still queued is answered NOT_FOUND ("was unloaded"). The
   * version is freed once the executions still running return.
   */
  unload(name: string): Promise<void> {
    return this.serialized(name, () => this.#unloadNow(name));
  }

  async #unloadNow(name: string): Promise<void> {
    const d = this.#d;
    const slot = d.registry.get(name);
    if (slot === undefined) return;
    slot.state = 'UNLOADING';
    d.registry.delete(slot);
    const dropped = await this.#drain(slot);
    const v = slot.current;
    slot.current = null;
    await v?.retire();
    d.log.info('model unloaded', { model: name, droppedQueued: dropped });
    this.#emit({ type: 'unloaded', model: name, dropped });
  }

  /** Waits up to the grace for a slot's queue to empty, then unschedules it; returns how many were dropped. */
  async #drain(slot: ModelSlot): Promise<number> {
    const d = this.#d;
    const queue = slot.queue;
    if (queue === null) return 0;
    const until = performance.now() + d.unloadGraceMs;
    while (d.scheduler.pendingRequests(queue) > 0 && performance.now() < until) {
      await new Promise((r) => setClampedTimeout(() => r(undefined), Math.min(20, until - performance.now())));
    }
    const dropped = d.scheduler.queueDepth(queue);
    d.scheduler.removeModel(queue);
    slot.queue = null;
    return dropped;
  }

  /**
   * A bundle directory renamed in place: the slot, its queue and statistics move to the new name
   * and keep their executables and weights (nothing is read or compiled again).
   */
  rename(from: string, to: string): Promise<void> {
    return this.serialized(from, () =>
      this.serialized(to, async () => {
        const d = this.#d;
        const slot = d.registry.get(from);
        if (slot === undefined || slot.current === null)
          throw new ServeError('HLO_ERR_MODEL_NOT_FOUND', `model '${from}' is not loaded`);
        if (d.registry.get(to) !== undefined)
          throw new ServeError('HLO_ERR_FAILED_PRECONDITION', `model '${to}' already exists`);
        const old = slot.current;
        d.policy.rename(from, to);
        const renamed = old.derive({ name: to }, this.nextGeneration());
        d.registry.rename(slot, to);
        if (slot.queue !== null) d.scheduler.renameModel(slot.queue, renamed.scheduling, renamed);
        slot.current = renamed;
        void old.retire();
        d.log.info('model renamed', { model: to, from, generation: renamed.generation });
        this.#emit({ type: 'renamed', model: to, from, generation: renamed.generation, recompiled: false });
      }),
    );
  }

  #emit(body: Parameters<LifecycleEvents['emit']>[0]): void {
    const e = this.#d.events.emit(body);
    this.#d.metrics.lifecycleEvents.inc({ model: e.model, event: e.type });
    this.#d.log.debug('lifecycle event', { ...e });
  }

  /** A slot's current version or NOT_FOUND/NOT_READY, for the control facade. */
  static serving(slot: ModelSlot | undefined, name: string): ModelVersion {
    if (slot === undefined) throw new ServeError('HLO_ERR_MODEL_NOT_FOUND', `model '${name}' is not loaded`);
    return slot.admit();
  }
}
