/**
 * The ModelPort over the engine: models, actions, policies and events come from the lifecycle's
 * ControlService facade (the one the gRPC ControlService serves too), memory from the Worker's
 * weight cache and runtime.
 */
import { ServeError } from '@hloserve/common/errors';
import type { Discipline, ModelPolicy, WorkerSettings } from '../../config/types.js';
import { ControlService, DRAIN_WAIT_MS, type ModelControlView } from '../control-service.js';
import type { LifecycleEvent } from '../../registry/lifecycle-events.js';
import type { LatencyCounts } from '../../observability/latency-histogram.js';
import type { Worker } from '../../worker/worker.js';
import { WorkerInspectPort } from './worker-inspect-port.js';
import type {
  DeviceMemoryView,
  EngineEvent,
  ModelAction,
  ModelPolicyPatch,
  ModelPolicyView,
  ModelPort,
  ModelLoad,
  ModelView,
  WorkerView,
} from './model-port.js';

export class WorkerModelPort implements ModelPort {
  readonly #worker: Worker;
  readonly #settings: WorkerSettings;
  readonly #control: ControlService;
  /** Policy changes are operations events too, though not lifecycle ones: told to these. */
  readonly #listeners = new Set<(event: EngineEvent) => void>();
  readonly inspect: WorkerInspectPort;

  readonly #name: string;

  constructor(
    worker: Worker,
    settings: WorkerSettings,
    control: ControlService = new ControlService(worker),
    /** The worker's name in node.yaml: the one the supervisor, the gateway and the logs use. */
    name = 'worker0',
  ) {
    this.#name = name;
    this.#worker = worker;
    this.#settings = settings;
    this.#control = control;
    this.inspect = new WorkerInspectPort(worker, control);
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
    const inflight = w.scheduler.inflightRequests;
    const meta = w.serverMetadata();
    return {
      name: this.#name,
      version: meta.version,
      platform: w.runtime.platformName,
      modelControlMode: this.#control.mode,
      discipline: w.scheduler.discipline,
      ready: w.serverReady(),
      inflight,
      devices: [device],
    };
  }

  models(): ModelView[] {
    return this.#control.models().map(view);
  }

  loads(): ModelLoad[] {
    const w = this.#worker;
    return w.registry.list().map((slot) => {
      const v = slot.current;
      const weights = v === null ? undefined : w.cache.modelStats(v.weights.key);
      const queue = slot.queue;
      return {
        name: slot.name,
        requestsServed: queue === null ? 0 : w.scheduler.requestsServed(queue),
        queueDepth: queue === null ? 0 : w.scheduler.queueDepth(queue),
        residentBytes: weights?.deviceResident ? weights.bytes : 0,
        loads: weights?.loads ?? 0,
        evictions: weights?.evictions ?? 0,
      };
    });
  }

  latency(name: string): LatencyCounts | undefined {
    return this.#control.latency(name);
  }

  model(name: string): ModelView | undefined {
    const m = this.#control.model(name);
    return m && view(m);
  }

  async act(name: string, action: ModelAction, signal?: AbortSignal): Promise<void> {
    const c = this.#control;
    switch (action) {
      case 'drain':
      case 'resume': {
        if (!c.model(name)) throw new ServeError('HLO_ERR_MODEL_NOT_FOUND', `unknown model '${name}'`);
        if (action === 'drain') await c.drain(name, DRAIN_WAIT_MS, signal);
        else c.resume(name);
        // Not a lifecycle event (the version does not change), but an operations one.
        const event: EngineEvent = { at: Date.now(), kind: `model.${action}`, model: name, data: {} };
        for (const l of this.#listeners) l(event);
        return;
      }
      case 'unload':
        if (!c.model(name)) throw new ServeError('HLO_ERR_MODEL_NOT_FOUND', `unknown model '${name}'`);
        return c.unload(name);
      case 'reload':
        if (!c.model(name)) throw new ServeError('HLO_ERR_MODEL_NOT_FOUND', `unknown model '${name}' (load it first)`);
        return c.reload(name, signal);
      case 'load':
        return c.load(name, signal);
    }
  }

  async setPolicy(name: string, patch: ModelPolicyPatch): Promise<ModelPolicyView> {
    if (!this.#control.model(name)) throw new ServeError('HLO_ERR_MODEL_NOT_FOUND', `unknown model '${name}'`);
    const policy = policyView(await this.#control.setPolicy(name, patch));
    const event: EngineEvent = { at: Date.now(), kind: 'model.policy', model: name, data: { ...policy } };
    for (const l of this.#listeners) l(event);
    return policy;
  }

  setDiscipline(discipline: Discipline): void {
    this.#control.setDiscipline(discipline);
  }

  setWeightBudget(bytes: number): void {
    this.#control.setWeightBudget(bytes);
  }

  /** The lifecycle's numbered events from now on, as the control layer's engine events. */
  subscribe(listener: (event: EngineEvent) => void): () => void {
    this.#listeners.add(listener);
    const off = this.#control.subscribe(this.#control.lastSeq, (e: LifecycleEvent) => {
      const { seq: _seq, at, type, model, ...data } = e;
      listener({ at, kind: `model.${type}`, model, data });
    });
    return () => {
      this.#listeners.delete(listener);
      off();
    };
  }
}

function policyView(p: ModelPolicy): ModelPolicyView {
  return {
    residency: p.residency,
    weight: p.weight,
    maxBatchSize: p.maxBatchSize,
    maxQueueDelayUs: p.maxQueueDelayUs,
  };
}

function view(m: ModelControlView): ModelView {
  const c = m.weights;
  const s = m.scheduling;
  return {
    name: m.name,
    // The KServe model version clients address; the generation is the engine's build counter.
    version: '1',
    state: m.state,
    reason: m.reason,
    batchSizes: m.batchSizes,
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
          lastUsedAt: c.lastUsedAt === null ? null : Math.round(c.lastUsedAt),
        }
      : null,
    policy: policyView(m.policy),
    queue: s
      ? {
          depth: s.queueDepth,
          rows: s.queuedRows,
          inflight: s.inflightRequests,
          oldestWaitMs: Math.round(s.oldestWaitMs),
          deadlineMisses: s.dropped.expired + s.dropped.shed,
        }
      : null,
    stats: s
      ? {
          requestsServed: s.requestsServed,
          rowsServed: s.rowsServed,
          paddedRows: s.paddedRows,
          dispatchCount: s.dispatchCount,
          failedDispatches: s.failedDispatches,
          computeSecondsTotal: s.computeSecondsTotal,
          queueWaitSecondsTotal: s.queueWaitSecondsTotal,
          costSeconds: { ...s.costEstimates },
        }
      : null,
    drain: m.drain && { since: m.drain.since, pending: m.drain.pending, idle: m.drain.idle },
  };
}
