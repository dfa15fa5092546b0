/**
 * On-demand device weights (reference §2.8): every model is registered with its byte size and a
 * residency floor; device copies are made when a dispatch needs them and evicted least recently
 * used under a byte budget. Device-pinned models sit outside the budget and are never evicted.
 *
 * Concurrency (acquires run from the dispatch loop's prefetch while another model executes):
 * - concurrent acquires of one model share one upload;
 * - a model with a lease (its execution may read the weights) or with acquirers waiting on its
 *   upload is never evicted;
 * - when the budget can only be met by evicting leased models, the load waits for their release
 *   instead of overcommitting the device; loads are admitted in arrival order;
 * - a model larger than the whole budget still loads once everything else is idle and evicted
 *   (with a warning), so an undersized budget degrades to "one model at a time", not to errors.
 *
 * A caller must not wait on one acquire while holding a lease of another model that the first
 * may need evicted (the scheduler never does: its leases end when executions settle).
 */
import { ServeError } from '@hloserve/common/errors';
import { systemClock, type Clock } from '../scheduler/clock.js';
import { consoleLogger, type SchedulerLogger } from '../scheduler/events.js';
import type { ExecutionLease } from '../scheduler/executor.js';
import type { Residency } from './residency.js';
import type { WeightBackend } from './weight-backend.js';

export interface WeightModelSpec<S = unknown> {
  /** The cache's key: one per set of weights (a model version's weight key). */
  readonly name: string;
  /** Where the backend reads these weights from (handed to WeightBackend.readHost). */
  readonly source?: S;
  /** Device bytes of the model's weights (the safetensors data size). */
  readonly bytes: number;
  /** Default: the cache's defaultResidency ('system'). */
  readonly residency?: Residency;
}

/** Proof that a model's weights stay on the device until release() (idempotent). */
export interface WeightLease<D> extends ExecutionLease {
  readonly model: string;
  readonly weights: D;
  release(): void;
}

export type EvictReason = 'lru' | 'budget' | 'compact' | 'removed' | 'oversized';

export type WeightCacheEvent =
  | {
      readonly type: 'load';
      readonly model: string;
      readonly bytes: number;
      readonly seconds: number;
      readonly pinned: boolean;
    }
  | { readonly type: 'evict'; readonly model: string; readonly bytes: number; readonly reason: EvictReason }
  | { readonly type: 'host-read'; readonly model: string; readonly bytes: number; readonly seconds: number }
  | { readonly type: 'oversized'; readonly model: string; readonly bytes: number; readonly budgetBytes: number };

export interface WeightCacheOptions<H, D, S = unknown> {
  readonly backend: WeightBackend<H, D, S>;
  /** Bytes for evictable device weights (weightBudget().onDemand); Infinity = never evict. */
  readonly budgetBytes: number;
  readonly defaultResidency?: Residency;
  readonly clock?: Clock;
  readonly logger?: SchedulerLogger;
  readonly onEvent?: (event: WeightCacheEvent) => void;
}

export interface WeightModelStats {
  readonly model: string;
  readonly bytes: number;
  readonly residency: Residency;
  readonly deviceResident: boolean;
  readonly hostResident: boolean;
  readonly loading: boolean;
  readonly leases: number;
  readonly loads: number;
  readonly evictions: number;
  readonly loadSeconds: number;
  /** When a dispatch last leased the weights (the cache clock, epoch ms with the system clock); null: never. */
  readonly lastUsedAt: number | null;
}

export interface WeightCacheStats {
  readonly budgetBytes: number;
  /** Evictable device bytes, uploads in progress included (they are reserved before they start). */
  readonly residentBytes: number;
  /** Device-pinned bytes (outside the budget). */
  readonly pinnedBytes: number;
  readonly loads: number;
  readonly evictions: number;
  readonly bytesLoaded: number;
  readonly loadSeconds: number;
  readonly hostReads: number;
  /** Acquires answered without an upload. */
  readonly hits: number;
  /** Loads admitted over budget because the model alone exceeds it. */
  readonly oversizedLoads: number;
}

interface Entry<H, D> {
  readonly name: string;
  readonly source: unknown;
  readonly bytes: number;
  residency: Residency;
  device: D | null;
  /** Upload in progress; its bytes are already reserved (unless device-pinned). */
  loading: Promise<void> | null;
  /** The device copy is counted in pinnedBytes rather than the budget. */
  pinnedAccounting: boolean;
  host: H | null;
  hostLoading: Promise<H> | null;
  leases: number;
  /** Acquirers awaiting `loading`; they hold the entry against eviction until they lease it. */
  waiters: number;
  removed: boolean;
  loads: number;
  evictions: number;
  loadSeconds: number;
  lastUsedAt: number | null;
}

interface Admission<H, D> {
  readonly entry: Entry<H, D>;
  readonly resolve: () => void;
  readonly reject: (err: ServeError) => void;
}

const notFound = (name: string): ServeError =>
  new ServeError('HLO_ERR_MODEL_NOT_FOUND', `unknown model '${name}' in the weight cache`);

export class WeightCache<H, D, S = unknown> {
  readonly #backend: WeightBackend<H, D, S>;
  readonly #clock: Clock;
  readonly #logger: SchedulerLogger;
  readonly #onEvent: ((event: WeightCacheEvent) => void) | undefined;
  readonly #defaultResidency: Residency;
  #budget: number;
  readonly #entries = new Map<string, Entry<H, D>>();
  /** Evictable-class models with a device copy, least recently used first (Map keeps insertion order). */
  readonly #lru = new Map<string, Entry<H, D>>();
  #admissions: Admission<H, D>[] = [];
  #residentBytes = 0;
  #pinnedBytes = 0;
  #loads = 0;
  #evictions = 0;
  #bytesLoaded = 0;
  #loadSeconds = 0;
  #hostReads = 0;
  #hits = 0;
  #oversized = 0;

  constructor(options: WeightCacheOptions<H, D, S>) {
    this.#backend = options.backend;
    this.#budget = options.budgetBytes;
    this.#defaultResidency = options.defaultResidency ?? 'system';
    this.#clock = options.clock ?? systemClock;
    this.#logger = options.logger ?? consoleLogger;
    this.#onEvent = options.onEvent;
    if (!(this.#budget >= 0)) throw new ServeError('HLO_ERR_CONFIG_INVALID', 'weight cache budget must be >= 0');
  }

  get budgetBytes(): number {
    return this.#budget;
  }

  /** Registers a model and establishes its floor (system: host read; device: upload). */
  async addModel(spec: WeightModelSpec<S>): Promise<void> {
    if (this.#entries.has(spec.name)) {
      throw new ServeError('HLO_ERR_FAILED_PRECONDITION', `model '${spec.name}' is already in the weight cache`);
    }
    if (!Number.isSafeInteger(spec.bytes) || spec.bytes < 0) {
      throw new ServeError(
        'HLO_ERR_CONFIG_INVALID',
        `model '${spec.name}': weight bytes must be a non-negative integer`,
      );
    }
    const e: Entry<H, D> = {
      name: spec.name,
      source: spec.source,
      bytes: spec.bytes,
      residency: spec.residency ?? this.#defaultResidency,
      device: null,
      loading: null,
      pinnedAccounting: false,
      host: null,
      hostLoading: null,
      leases: 0,
      waiters: 0,
      removed: false,
      loads: 0,
      evictions: 0,
      loadSeconds: 0,
      lastUsedAt: null,
    };
    this.#entries.set(spec.name, e);
    await this.#applyFloor(e);
  }

  has(name: string): boolean {
    return this.#entries.has(name);
  }

  isResident(name: string): boolean {
    return this.#entries.get(name)?.device != null;
  }

  /**
   * Device weights for one execution. A resident model is a hit (and becomes most recently
   * used); a cold one is uploaded once, however many callers ask at the same time.
   */
  async acquire(name: string): Promise<WeightLease<D>> {
    const e = this.#entries.get(name);
    if (e === undefined) throw notFound(name);
    for (;;) {
      if (e.removed) throw notFound(name);
      if (e.device !== null && e.loading === null) {
        this.#hits++;
        return this.#lease(e);
      }
      const loading = this.#startLoad(e);
      e.waiters++;
      try {
        await loading;
      } finally {
        e.waiters--;
      }
      if (e.device !== null && !e.removed) return this.#lease(e);
    }
  }

  /** Changes a model's floor; resolves once the new floor holds (uploads/host reads done). */
  async setResidency(name: string, target: Residency): Promise<void> {
    const e = this.#entries.get(name);
    if (e === undefined) throw notFound(name);
    while (e.loading !== null) await e.loading.catch(() => undefined);
    const previous = e.residency;
    e.residency = target;
    if (previous !== target && e.device !== null) {
      if (target === 'device' && !e.pinnedAccounting) {
        this.#lru.delete(name);
        this.#residentBytes -= e.bytes;
        this.#pinnedBytes += e.bytes;
        e.pinnedAccounting = true;
        this.#processAdmissions();
      } else if (target !== 'device' && e.pinnedAccounting) {
        // Unpinned weights join the budget as most recently used; others make room if they can.
        this.#pinnedBytes -= e.bytes;
        this.#residentBytes += e.bytes;
        e.pinnedAccounting = false;
        this.#lru.set(name, e);
        this.#trimToBudget('budget');
      }
    }
    await this.#applyFloor(e);
  }

  /** New budget (autosizing after a probe, or an operator change); evicts idle models to meet it. */
  setBudget(bytes: number): void {
    if (!(bytes >= 0)) throw new ServeError('HLO_ERR_CONFIG_INVALID', 'weight cache budget must be >= 0');
    this.#budget = bytes;
    this.#trimToBudget('budget');
    this.#processAdmissions();
  }

  /** Frees every idle evictable device copy at once (compaction); returns the bytes freed. */
  evictIdle(): number {
    let freed = 0;
    for (const e of [...this.#lru.values()]) {
      if (this.#evictable(e)) {
        freed += e.bytes;
        this.#evict(e, 'compact');
      }
    }
    this.#processAdmissions();
    return freed;
  }

  /** Forgets a model; its device copy is freed now, or when its last lease is released. */
  removeModel(name: string): boolean {
    const e = this.#entries.get(name);
    if (e === undefined) return false;
    e.removed = true;
    this.#entries.delete(name);
    this.#freeIfRemoved(e);
    this.#processAdmissions();
    return true;
  }

  /**
   * The totals. A model's figures come from modelStats(): the feed's sampler and every /metrics
   * scrape read these, and a list of every model's, sorted, cost each ~0.4 ms at a thousand models.
   */
  stats(): WeightCacheStats {
    return {
      budgetBytes: this.#budget,
      residentBytes: this.#residentBytes,
      pinnedBytes: this.#pinnedBytes,
      loads: this.#loads,
      evictions: this.#evictions,
      bytesLoaded: this.#bytesLoaded,
      loadSeconds: this.#loadSeconds,
      hostReads: this.#hostReads,
      hits: this.#hits,
      oversizedLoads: this.#oversized,
    };
  }

  modelStats(name: string): WeightModelStats | undefined {
    const e = this.#entries.get(name);
    return e === undefined ? undefined : this.#modelStats(e);
  }

  /** Names of evictable resident models, least recently used first (what would go next). */
  lruOrder(): string[] {
    return [...this.#lru.keys()];
  }

  // ---- internals ----------------------------------------------------------------------------

  #modelStats(e: Entry<H, D>): WeightModelStats {
    return {
      model: e.name,
      bytes: e.bytes,
      residency: e.residency,
      deviceResident: e.device !== null,
      hostResident: e.host !== null,
      loading: e.loading !== null,
      leases: e.leases,
      loads: e.loads,
      evictions: e.evictions,
      loadSeconds: e.loadSeconds,
      lastUsedAt: e.lastUsedAt,
    };
  }

  #lease(e: Entry<H, D>): WeightLease<D> {
    e.leases++;
    e.lastUsedAt = this.#clock.now();
    if (this.#lru.has(e.name)) {
      this.#lru.delete(e.name);
      this.#lru.set(e.name, e);
    }
    const weights = e.device as D;
    let released = false;
    return {
      model: e.name,
      weights,
      release: () => {
        if (released) return;
        released = true;
        e.leases--;
        if (e.removed) this.#freeIfRemoved(e);
        if (this.#admissions.length > 0) this.#processAdmissions();
      },
    };
  }

  #startLoad(e: Entry<H, D>): Promise<void> {
    if (e.loading === null) {
      const loading = this.#load(e);
      e.loading = loading;
      // Waiters see the failure through their own await; this keeps an unobserved one quiet.
      loading.catch(() => undefined);
    }
    return e.loading;
  }

  async #load(e: Entry<H, D>): Promise<void> {
    const pinned = e.residency === 'device';
    try {
      if (!pinned) await this.#admit(e);
    } catch (err) {
      e.loading = null;
      throw err;
    }
    const start = this.#clock.now();
    try {
      const host = await this.#ensureHost(e);
      const device = await this.#backend.upload(e.name, host);
      const seconds = (this.#clock.now() - start) / 1000;
      e.device = device;
      e.pinnedAccounting = pinned;
      if (pinned) this.#pinnedBytes += e.bytes;
      else this.#lru.set(e.name, e);
      e.loads++;
      e.loadSeconds += seconds;
      this.#loads++;
      this.#bytesLoaded += e.bytes;
      this.#loadSeconds += seconds;
      this.#emit({ type: 'load', model: e.name, bytes: e.bytes, seconds, pinned });
      if (e.residency !== 'system' && e.host !== null) this.#dropHost(e);
    } catch (err) {
      if (!pinned) this.#residentBytes -= e.bytes;
      throw err;
    } finally {
      e.loading = null;
      if (e.removed) this.#freeIfRemoved(e);
      this.#processAdmissions();
    }
  }

  #admit(e: Entry<H, D>): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#admissions.push({ entry: e, resolve, reject });
      this.#processAdmissions();
    });
  }

  /** Admits waiting loads in arrival order; stops at the first that must keep waiting. */
  #processAdmissions(): void {
    while (this.#admissions.length > 0) {
      const head = this.#admissions[0]!;
      if (head.entry.removed) {
        this.#admissions.shift();
        head.reject(notFound(head.entry.name));
        continue;
      }
      if (!this.#tryAdmit(head.entry)) return;
      this.#admissions.shift();
      head.resolve();
    }
  }

  /** Reserves the entry's bytes, evicting idle LRU models as needed; false = must wait. */
  #tryAdmit(e: Entry<H, D>): boolean {
    const need = e.bytes;
    if (this.#residentBytes + need <= this.#budget) {
      this.#residentBytes += need;
      return true;
    }
    const victims: Entry<H, D>[] = [];
    let freed = 0;
    for (const v of this.#lru.values()) {
      if (this.#residentBytes - freed + need <= this.#budget) break;
      if (this.#evictable(v)) {
        victims.push(v);
        freed += v.bytes;
      }
    }
    const fits = this.#residentBytes - freed + need <= this.#budget;
    // What stays after evicting every idle model is held by leases or uploads: wait for them.
    if (!fits && this.#residentBytes - freed > 0) return false;
    for (const v of victims) this.#evict(v, fits ? 'lru' : 'oversized');
    if (!fits) {
      this.#oversized++;
      this.#logger.warn('weight cache: model larger than the budget; loading it alone over budget', {
        model: e.name,
        bytes: need,
        budgetBytes: this.#budget,
      });
      this.#emit({ type: 'oversized', model: e.name, bytes: need, budgetBytes: this.#budget });
    }
    this.#residentBytes += need;
    return true;
  }

  #evictable(e: Entry<H, D>): boolean {
    return e.device !== null && !e.pinnedAccounting && e.leases === 0 && e.waiters === 0 && e.loading === null;
  }

  #evict(e: Entry<H, D>, reason: EvictReason): void {
    const device = e.device;
    if (device === null) return;
    e.device = null;
    if (e.pinnedAccounting) this.#pinnedBytes -= e.bytes;
    else {
      this.#lru.delete(e.name);
      this.#residentBytes -= e.bytes;
    }
    e.pinnedAccounting = false;
    e.evictions++;
    this.#evictions++;
    try {
      this.#backend.free(e.name, device);
    } catch (err) {
      this.#logger.warn('weight cache: freeing device weights failed', {
        model: e.name,
        error: err instanceof Error ? err.message : String(err),
      });
    }
    this.#emit({ type: 'evict', model: e.name, bytes: e.bytes, reason });
  }

  #trimToBudget(reason: EvictReason): void {
    for (const v of [...this.#lru.values()]) {
      if (this.#residentBytes <= this.#budget) return;
      if (this.#evictable(v)) this.#evict(v, reason);
    }
  }

  #freeIfRemoved(e: Entry<H, D>): void {
    if (e.leases > 0 || e.waiters > 0 || e.loading !== null) return;
    this.#evict(e, 'removed');
    if (e.host !== null) this.#dropHost(e);
  }

  async #applyFloor(e: Entry<H, D>): Promise<void> {
    if (e.residency === 'system') {
      await this.#ensureHost(e);
    } else if (e.residency === 'device') {
      if (e.device === null) await this.#startLoad(e);
      if (e.host !== null && e.loading === null) this.#dropHost(e);
    } else if (e.host !== null && e.loading === null) {
      this.#dropHost(e);
    }
  }

  async #ensureHost(e: Entry<H, D>): Promise<H> {
    if (e.host !== null) return e.host;
    if (e.hostLoading === null) {
      const start = this.#clock.now();
      e.hostLoading = this.#backend.readHost(e.name, e.source as S).then(
        (host) => {
          e.hostLoading = null;
          e.host = host;
          this.#hostReads++;
          this.#emit({ type: 'host-read', model: e.name, bytes: e.bytes, seconds: (this.#clock.now() - start) / 1000 });
          return host;
        },
        (err: unknown) => {
          e.hostLoading = null;
          throw err;
        },
      );
    }
    return e.hostLoading;
  }

  #dropHost(e: Entry<H, D>): void {
    const host = e.host;
    if (host === null) return;
    e.host = null;
    try {
      this.#backend.releaseHost?.(e.name, host);
    } catch (err) {
      this.#logger.warn('weight cache: releasing host weights failed', {
        model: e.name,
        error: err instanceof Error ? err.message : String(err),
      });
    }
  }

  #emit(event: WeightCacheEvent): void {
    if (this.#onEvent === undefined) return;
    try {
      this.#onEvent(event);
    } catch {
      // Observation must never break serving.
    }
  }
}
