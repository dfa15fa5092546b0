/**
 * The ModelPort over today's Worker, until the lifecycle's ControlService facade takes its place.
 * What the Worker cannot do yet (drain) is refused here, and only here, with the reason.
 *
 * The Worker reads node.yaml's policy when it (re)loads a model, so live policy changes made
 * through this port are kept here and applied again after every load.
 */
import { ServeError } from '@hloserve/common/errors';
import type { Discipline, ModelPolicy, WorkerSettings } from '../../config/types.js';
import type { Worker } from '../../worker/worker.js';
import type {
  DeviceMemoryView,
  EngineEvent,
  ModelAction,
  ModelPolicyPatch,
  ModelPolicyView,
  ModelPort,
  ModelView,
  WorkerView,
} from './model-port.js';

const POLL_MS = 250;

interface Observed {
  state: string;
  deviceResident: boolean;
  loads: number;
  evictions: number;
}

export class WorkerModelPort implements ModelPort {
  readonly #worker: Worker;
  readonly #settings: WorkerSettings;
  readonly #overrides = new Map<string, ModelPolicyPatch>();
  readonly #listeners = new Set<(e: EngineEvent) => void>();
  readonly #observed = new Map<string, Observed>();
  #timer: NodeJS.Timeout | null = null;

  constructor(worker: Worker, settings: WorkerSettings) {
    this.#worker = worker;
    this.#settings = settings;
    for (const m of this.models()) this.#observed.set(m.name, this.#observe(m));
  }

  worker(): WorkerView {
    const w = this.#worker;
    const cache = w.cache.stats();
    const mem = w.runtime.memoryStats(0);
    const arena = w.arenaStats();
    const budget = Number.isFinite(cache.budgetBytes) ? cache.budgetBytes : null;
    const device: DeviceMemoryView = {
      ordinal: this.#settings.runtime.deviceOrdinal,
      platform: w.runtime.platformName,
      totalBytes: mem?.bytesLimit ?? null,
      budgetBytes: budget,
      residentBytes: cache.residentBytes,
      pinnedBytes: cache.pinnedBytes,
      arenaBytes: arena?.mappedBytes ?? null,
      freeBytes: budget === null ? null : Math.max(0, budget - cache.residentBytes),
    };
    let inflight = 0;
    for (const s of w.scheduler.allStats()) inflight += s.inflightRequests;
    const meta = w.serverMetadata();
    return {
      name: meta.name,
      version: meta.version,
      platform: w.runtime.platformName,
      modelControlMode: this.#settings.modelControlMode,
      discipline: w.scheduler.discipline,
      ready: w.serverReady(),
      inflight,
      devices: [device],
    };
  }

  models(): ModelView[] {
    return this.#worker.repositoryIndex(false).map((e) => this.#view(e.name, e.state, e.reason));
  }

  model(name: string): ModelView | undefined {
    const e = this.#worker.repositoryIndex(false).find((m) => m.name === name);
    return e && this.#view(e.name, e.state, e.reason);
  }

  #view(name: string, state: ModelView['state'], reason: string): ModelView {
    const w = this.#worker;
    const c = w.cache.modelStats(name);
    const s = w.scheduler.stats(name);
    return {
      name,
      version: '1',
      state,
      reason,
      batchSizes: s ? Object.keys(s.costEstimates).map(Number) : [],
      residency: c
        ? {
            floor: c.residency,
            weightBytes: c.bytes,
            deviceResident: c.deviceResident,
            hostResident: c.hostResident,
            loading: c.loading,
            leases: c.leases,
            loads: c.loads,
            evictions: c.evictions,
          }
        : null,
      policy: s ? this.#policy(name) : null,
      queue: s ? { depth: s.queueDepth, rows: s.queuedRows, inflight: s.inflightRequests } : null,
      stats: s
        ? {
            requestsServed: s.requestsServed,
            rowsServed: s.rowsServed,
            paddedRows: s.paddedRows,
            dispatchCount: s.dispatchCount,
            failedDispatches: s.failedDispatches,
            computeSecondsTotal: s.computeSecondsTotal,
            queueWaitSecondsTotal: s.queueWaitSecondsTotal,
            costSeconds: Object.fromEntries(Object.entries(s.costEstimates).map(([k, v]) => [k, v])),
          }
        : null,
    };
  }

  #policy(name: string): ModelPolicyView {
    const yaml: ModelPolicy | undefined = this.#settings.scheduler.models[name];
    const o = this.#overrides.get(name) ?? {};
    return {
      residency: this.#worker.cache.modelStats(name)?.residency ?? o.residency ?? yaml?.residency ?? 'system',
      weight: o.weight ?? yaml?.weight ?? 1,
      maxBatchSize: o.maxBatchSize !== undefined ? o.maxBatchSize : (yaml?.maxBatchSize ?? null),
      maxQueueDelayUs: o.maxQueueDelayUs !== undefined ? o.maxQueueDelayUs : (yaml?.maxQueueDelayUs ?? null),
    };
  }

  async act(name: string, action: ModelAction, signal?: AbortSignal): Promise<void> {
    if (action === 'drain')
      throw new ServeError(
        'HLO_ERR_FAILED_PRECONDITION',
        `drain of '${name}' is not available yet (needs the model lifecycle)`,
      );
    const mode = this.#settings.modelControlMode;
    if (mode === 'static')
      throw new ServeError(
        'HLO_ERR_FAILED_PRECONDITION',
        `${action} is refused: model_control_mode is 'static' (set 'explicit' or 'dynamic' in node.yaml)`,
      );
    if (action === 'unload') {
      if (!this.model(name)) throw new ServeError('HLO_ERR_MODEL_NOT_FOUND', `unknown model '${name}'`);
      await this.#worker.unloadModel(name);
      this.#emit('model.unloaded', name, {});
      return;
    }
    if (action === 'reload' && !this.model(name))
      throw new ServeError('HLO_ERR_MODEL_NOT_FOUND', `unknown model '${name}' (load it first)`);
    this.#emit('model.loading', name, { action });
    try {
      await this.#worker.loadModel(name, signal);
    } catch (err) {
      this.#emit('model.load_failed', name, { action, error: (err as Error).message });
      throw err;
    }
    await this.#reapply(name);
    this.#emit('model.loaded', name, { action });
  }

  async #reapply(name: string): Promise<void> {
    const o = this.#overrides.get(name);
    if (o) await this.#apply(name, o);
  }

  async setPolicy(name: string, patch: ModelPolicyPatch): Promise<ModelPolicyView> {
    const view = this.model(name);
    if (!view) throw new ServeError('HLO_ERR_MODEL_NOT_FOUND', `unknown model '${name}'`);
    const merged = { ...this.#overrides.get(name), ...patch };
    if (view.state === 'READY') await this.#apply(name, patch);
    this.#overrides.set(name, merged);
    const policy = this.#policy(name);
    this.#emit('model.policy', name, { ...policy });
    return policy;
  }

  async #apply(name: string, patch: ModelPolicyPatch): Promise<void> {
    const w = this.#worker;
    const { residency, ...knobs } = patch;
    if (Object.keys(knobs).length > 0 && w.scheduler.hasModel(name)) w.scheduler.updateModel(name, knobs);
    if (residency !== undefined && w.cache.has(name)) await w.cache.setResidency(name, residency);
  }

  setDiscipline(discipline: Discipline): void {
    this.#worker.scheduler.setDiscipline(discipline);
    this.#emit('worker.discipline', null, { discipline });
  }

  subscribe(listener: (event: EngineEvent) => void): () => void {
    this.#listeners.add(listener);
    if (this.#timer === null) {
      this.#timer = setInterval(() => this.#poll(), POLL_MS);
      this.#timer.unref();
    }
    return () => {
      this.#listeners.delete(listener);
      if (this.#listeners.size === 0 && this.#timer !== null) {
        clearInterval(this.#timer);
        this.#timer = null;
      }
    };
  }

  #emit(kind: string, model: string | null, data: Record<string, unknown>): void {
    const e: EngineEvent = { at: Date.now(), kind, model, data };
    for (const l of this.#listeners) l(e);
  }

  #observe(m: ModelView): Observed {
    return {
      state: m.state,
      deviceResident: m.residency?.deviceResident ?? false,
      loads: m.residency?.loads ?? 0,
      evictions: m.residency?.evictions ?? 0,
    };
  }

  // The Worker has no event hook for state and weight traffic, so changes are found by comparison.
  #poll(): void {
    const seen = new Set<string>();
    for (const m of this.models()) {
      seen.add(m.name);
      const now = this.#observe(m);
      const was = this.#observed.get(m.name);
      this.#observed.set(m.name, now);
      if (!was) continue;
      if (was.state !== now.state)
        this.#emit('model.state', m.name, { from: was.state, to: now.state, reason: m.reason });
      if (now.loads > was.loads) this.#emit('weights.loaded', m.name, { loads: now.loads - was.loads });
      if (now.evictions > was.evictions)
        this.#emit('weights.evicted', m.name, { evictions: now.evictions - was.evictions });
    }
    for (const name of [...this.#observed.keys()]) if (!seen.has(name)) this.#observed.delete(name);
  }
}
