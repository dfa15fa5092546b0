import { invalidArgument, quote, ServeError } from '@hloserve/common/errors';
import type { ModelState } from '../transports/service.js';
import type { ModelVersion } from '../model/model-version.js';
import type { ModelQueue } from '../scheduler/scheduler.js';
import { ModelStatistics } from '../observability/model-statistics.js';

/**
 * One model name's place in the worker: its state, the version new requests capture, and what
 * outlives versions (its statistics). A failed reload leaves `current` serving and says why in
 * `reason`.
 */
export class ModelSlot {
  state: ModelState;
  reason = '';
  current: ModelVersion | null = null;
  /**
   * The model's queue in the scheduler (its costs and counters with it): null before the first
   * load, for a meta model (its sub-models are queued) and once unloaded. Kept here, on the one
   * index of names, so a rename or an unload moves or drops it in the same step.
   */
  queue: ModelQueue | null = null;
  readonly stats = new ModelStatistics();
  /** Signature of the last bundle a load was attempted from (dynamic mode retries on a new one). */
  attemptedSignature = '';
  /** The directory's (device, inode), for renames in dynamic mode. */
  directoryId = '';
  /** When a drain began (ms since the epoch): no new request is admitted until it is lifted. */
  drainingSince: number | null = null;

  constructor(
    public name: string,
    state: ModelState = 'LOADING',
  ) {
    this.state = state;
  }

  /** The version a request admitted now runs on, or the error that says why there is none. */
  admit(): ModelVersion {
    const v = this.current;
    if (v === null || (this.state !== 'READY' && this.state !== 'LOADING')) {
      throw new ServeError(
        'HLO_ERR_MODEL_NOT_READY',
        `model '${this.name}' is not ready (${this.state}${this.reason ? `: ${this.reason}` : ''})`,
      );
    }
    if (this.drainingSince !== null) {
      throw new ServeError(
        'HLO_ERR_MODEL_NOT_READY',
        `model '${this.name}' is draining: it admits no new requests until it is resumed or loaded again`,
      );
    }
    return v;
  }
}

/** name -> slot: the one index of the worker's models. */
export class Registry {
  readonly #slots = new Map<string, ModelSlot>();

  get(name: string): ModelSlot | undefined {
    return this.#slots.get(name);
  }

  /** The slot a KServe call names; NOT_FOUND for a name the worker does not know. */
  require(name: string, version: string): ModelSlot {
    if (!name) throw invalidArgument('model name must not be empty');
    if (version && version !== '1')
      throw new ServeError(
        'HLO_ERR_MODEL_NOT_FOUND',
        `model ${quote(name)} has no version ${quote(version)} (only '1')`,
      );
    const s = this.#slots.get(name);
    if (!s) throw new ServeError('HLO_ERR_MODEL_NOT_FOUND', `Request for unknown model: ${quote(name)} is not found`);
    return s;
  }

  /** The slot for `name`, made (in state LOADING) if there is none. */
  ensure(name: string): ModelSlot {
    let s = this.#slots.get(name);
    if (s === undefined) {
      s = new ModelSlot(name);
      this.#slots.set(name, s);
    }
    return s;
  }

  delete(slot: ModelSlot): void {
    if (this.#slots.get(slot.name) === slot) this.#slots.delete(slot.name);
  }

  /** Moves a slot to a new name (a renamed bundle directory); statistics move with it. */
  rename(slot: ModelSlot, to: string): void {
    if (this.#slots.has(to)) throw new ServeError('HLO_ERR_FAILED_PRECONDITION', `model '${to}' already exists`);
    this.delete(slot);
    slot.name = to;
    this.#slots.set(to, slot);
  }

  /** Slots sorted by name. */
  list(): ModelSlot[] {
    return [...this.#slots.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  get size(): number {
    return this.#slots.size;
  }
}
