/**
 * The one control facade of a worker: what the ControlService RPCs (proto/hloserve/control.proto),
 * the REST + WebSocket control API and the console may ask of the models. Everything goes through
 * here, so a mode's rules (static, dynamic, explicit) are enforced in one place.
 */
import { ServeError } from '@hloserve/common/errors';
import { setClampedTimeout } from '@hloserve/common/timers';
import type { Discipline, ModelControlMode, ModelPolicy, Residency } from '../config/types.js';
import type { ModelState } from '../transports/service.js';
import type { LifecycleEvent, LifecycleListener } from '../registry/lifecycle-events.js';
import type { PolicyLayer } from '../registry/policy.js';
import type { ModelSlot } from '../registry/registry.js';
import type { ModelSchedulingStats } from '../scheduler/model-counters.js';
import type { WeightModelStats } from '../weights/weight-cache.js';
import type { LatencyCounts } from '../observability/latency-histogram.js';
import type { Worker } from '../worker/worker.js';

/** self_managed: the worker's weight cache decides residency; externally_managed: a control plane does (explicit mode). */
export type ResidencyMode = 'self_managed' | 'externally_managed';

/** One model as the control layer sees it. */
export interface ModelControlView {
  readonly name: string;
  readonly state: ModelState;
  /** Why it is not ready, or why a reload failed while an older version serves; '' when all is well. */
  readonly reason: string;
  /** The serving version's generation (increases with every load, reload, rename); null when none serves. */
  readonly generation: number | null;
  readonly batchSizes: readonly number[];
  /** The policy in effect (node.yaml, then persisted, then live). */
  readonly policy: ModelPolicy;
  readonly weightBytes: number;
  /** The weight cache's view of the serving version's weights; null when none serves. */
  readonly weights: WeightModelStats | null;
  /** The scheduler's counters and queue; null when the model is not scheduled. */
  readonly scheduling: ModelSchedulingStats | null;
  /** Largest batch one dispatch may carry (compiled size capped by max_batch_size); 0 when unknown. */
  readonly maxBatchSize: number;
  /** The first executable input with a batch axis, and that axis (wire order, 0-based); null when none. */
  readonly batchInput: { readonly name: string; readonly axis: number } | null;
  /** Set while the model is drained: no new requests are admitted. */
  readonly drain: DrainView | null;
}

export interface DrainView {
  /** When the drain began, ms since the epoch. */
  readonly since: number;
  /** Requests admitted before the drain that have not been answered yet (queued or executing). */
  readonly pending: number;
  /** True once every request admitted before the drain has been answered. */
  readonly idle: boolean;
}

/** How long a drain call waits for the model to go idle before it answers with what is left. */
export const DRAIN_WAIT_MS = 30_000;

export interface ControlStatus {
  readonly mode: ModelControlMode;
  readonly residencyMode: ResidencyMode;
  readonly discipline: Discipline;
  readonly models: readonly ModelControlView[];
  /** Weight cache budget for evictable weights (Infinity: unlimited). */
  readonly weightCacheMaxBytes: number;
  readonly weightCacheResidentBytes: number;
  readonly weightCachePinnedBytes: number;
}

export interface CompactResult {
  readonly reloadedModels: readonly string[];
  readonly residentBytesAfter: number;
}

export class ControlService {
  readonly #w: Worker;

  constructor(worker: Worker) {
    this.#w = worker;
  }

  get mode(): ModelControlMode {
    return this.#w.modelControlMode;
  }

  get residencyMode(): ResidencyMode {
    return this.mode === 'explicit' ? 'externally_managed' : 'self_managed';
  }

  // ---- reading -------------------------------------------------------------------------------

  status(): ControlStatus {
    const s = this.#w.cache.stats();
    return {
      mode: this.mode,
      residencyMode: this.residencyMode,
      discipline: this.#w.scheduler.discipline,
      models: this.models(),
      weightCacheMaxBytes: s.budgetBytes,
      weightCacheResidentBytes: s.residentBytes,
      weightCachePinnedBytes: s.pinnedBytes,
    };
  }

  models(): ModelControlView[] {
    return this.#w.registry.list().map((s) => this.#view(s));
  }

  /** The model's request latency distribution (cumulative; it outlives versions); undefined: no such model. */
  latency(name: string): LatencyCounts | undefined {
    return this.#w.registry.get(name)?.stats.latency;
  }

  /** undefined: no model of that name. */
  model(name: string): ModelControlView | undefined {
    const s = this.#w.registry.get(name);
    return s === undefined ? undefined : this.#view(s);
  }

  #view(slot: ModelSlot): ModelControlView {
    const w = this.#w;
    const v = slot.current;
    const scheduling = w.scheduler.stats(slot.queue) ?? null;
    let batchInput: ModelControlView['batchInput'] = null;
    if (v !== null) {
      const i = v.bundle.manifest.executableInputs.findIndex((x) => x.wireBatchAxis !== null);
      if (i >= 0) {
        const spec = v.bundle.manifest.executableInputs[i]!;
        batchInput = { name: spec.name, axis: spec.wireBatchAxis! };
      }
    }
    const maxRows = scheduling?.maxRows ?? 0;
    return {
      name: slot.name,
      state: slot.state,
      reason: slot.reason,
      generation: v?.generation ?? null,
      batchSizes: v?.batchSizes ?? [],
      policy: w.policy.resolve(slot.name),
      weightBytes: v?.weights.bytes ?? 0,
      weights: v === null ? null : (w.cache.modelStats(v.weights.key) ?? null),
      scheduling,
      maxBatchSize: Number.isFinite(maxRows) ? maxRows : 0,
      batchInput,
      drain: slot.drainingSince === null ? null : drainView(slot),
    };
  }

  // ---- changing models -----------------------------------------------------------------------

  /** Loads (or reloads) a model from the repository; lifts a drain. Refused in static mode. */
  async load(name: string, signal?: AbortSignal): Promise<void> {
    await this.#w.loadModel(name, signal);
    this.resume(name);
  }

  /** A reload is a load of a model that is serving: built beside it, swapped when ready. */
  async reload(name: string, signal?: AbortSignal): Promise<void> {
    this.#require(name);
    await this.#w.loadModel(name, signal);
    this.resume(name);
  }

  /**
   * Drains a model: from now on it admits no new request (each is refused with
   * HLO_ERR_MODEL_NOT_READY naming the drain, and KServe readiness turns false), while the
   * requests already admitted, queued or executing, finish. Resolves once they have (or after
   * `waitMs`, with what is left in the view); resume, load or reload lift it.
   */
  async drain(name: string, waitMs = DRAIN_WAIT_MS, signal?: AbortSignal): Promise<DrainView> {
    const slot = this.#require(name);
    slot.drainingSince ??= Date.now();
    const deadline = Date.now() + waitMs;
    for (;;) {
      const d = drainView(slot);
      if (d.idle || Date.now() >= deadline || signal?.aborted || slot.drainingSince === null) return d;
      await new Promise<void>((r) => setClampedTimeout(r, 10));
    }
  }

  /** Lifts a drain (nothing happens for a model that is not drained). */
  resume(name: string): void {
    const slot = this.#w.registry.get(name);
    if (slot) slot.drainingSince = null;
  }

  /** Unloads a model: queued requests get the unload grace, then NOT_FOUND. Refused in static mode. */
  unload(name: string): Promise<void> {
    this.#require(name);
    return this.#w.unloadModel(name);
  }

  /**
   * A live policy change (the control API's layer over node.yaml and persisted settings). Weight,
   * max_batch_size and the batching window apply to the queue at once; a residency floor resolves
   * once it holds (an upload or a host read may run). Returns the policy now in effect.
   */
  async setPolicy(name: string, change: PolicyLayer): Promise<ModelPolicy> {
    const w = this.#w;
    const slot = this.#require(name);
    const p = w.policy.applyLive(name, change);
    if (slot.queue !== null) {
      w.scheduler.updateModel(slot.queue, {
        weight: p.weight,
        maxBatchSize: p.maxBatchSize,
        maxQueueDelayUs: p.maxQueueDelayUs,
      });
    }
    if (change.residency !== undefined && slot.current !== null) {
      await w.cache.setResidency(slot.current.weights.key, p.residency);
      w.events.emit({ type: 'residency-changed', model: name, residency: p.residency });
    }
    return p;
  }

  /** Sets the persisted policy layer of a model (the control layer's store, restored at start). */
  setPersistedPolicy(name: string, layer: PolicyLayer): void {
    this.#w.policy.setPersisted(name, layer);
  }

  /** SetModelResidency: only a control plane (explicit mode) moves residency this way. */
  async setResidency(name: string, target: Residency): Promise<Residency> {
    if (this.mode !== 'explicit') {
      throw new ServeError(
        'HLO_ERR_FAILED_PRECONDITION',
        `SetModelResidency needs global.model_control_mode explicit (this worker runs ${this.mode}); ` +
          'use the model policy to change a residency floor',
      );
    }
    return (await this.setPolicy(name, { residency: target })).residency;
  }

  /** Changes the dispatch discipline for every model. */
  setDiscipline(discipline: Discipline): void {
    this.#w.scheduler.setDiscipline(discipline);
  }

  /** The evictable-weights budget; idle models over it are evicted least recently used first. */
  setWeightBudget(bytes: number): void {
    this.#w.cache.setBudget(bytes);
  }

  /**
   * Frees every idle evictable device copy, then brings `reloadModels` back onto the device (in
   * that order). Unknown names answer NOT_FOUND before anything is evicted.
   */
  async compactMemory(reloadModels: readonly string[]): Promise<CompactResult> {
    const w = this.#w;
    const versions = reloadModels.map((n) => {
      const v = this.#require(n).current;
      if (v === null) throw new ServeError('HLO_ERR_MODEL_NOT_READY', `model '${n}' is not loaded`);
      return v;
    });
    w.cache.evictIdle();
    const reloaded: string[] = [];
    for (const v of versions) {
      const lease = await w.cache.acquire(v.weights.key);
      lease.release();
      reloaded.push(v.name);
    }
    return { reloadedModels: reloaded, residentBytesAfter: w.cache.stats().residentBytes };
  }

  // ---- events --------------------------------------------------------------------------------

  /** Kept lifecycle events after `afterSeq` (0: all kept), oldest first. */
  events(afterSeq = 0): LifecycleEvent[] {
    return this.#w.events.since(afterSeq);
  }

  /** Replays kept events after `afterSeq`, then delivers new ones; returns the unsubscribe function. */
  subscribe(afterSeq: number, listener: LifecycleListener): () => void {
    return this.#w.events.subscribe(afterSeq, listener);
  }

  /** The latest event's sequence number (0 before any). */
  get lastSeq(): number {
    return this.#w.events.lastSeq;
  }

  #require(name: string): ModelSlot {
    const s = this.#w.registry.get(name);
    if (s === undefined) throw new ServeError('HLO_ERR_MODEL_NOT_FOUND', `model '${name}' is not loaded`);
    return s;
  }
}

function drainView(slot: ModelSlot): DrainView {
  const pending = slot.current?.holds ?? 0;
  return { since: slot.drainingSince ?? 0, pending, idle: pending === 0 };
}
