import { ServeError } from '@hloserve/common/errors';
import type { ModelPolicy, Residency } from '../config/types.js';

/** Any subset of a model's policy; a layer sets what it names and leaves the rest to the layer below. */
export type PolicyLayer = Partial<ModelPolicy>;

const RESIDENCIES: readonly Residency[] = ['unpinned', 'system', 'device'];

/** Rejects knobs out of range with INVALID_ARGUMENT, naming the model. */
export function checkPolicyLayer(model: string, layer: PolicyLayer): void {
  const bad = (what: string): never => {
    throw new ServeError('HLO_ERR_INVALID_ARGUMENT', `model '${model}': ${what}`);
  };
  if (layer.weight !== undefined && !(layer.weight > 0 && Number.isFinite(layer.weight)))
    bad(`weight must be > 0, got ${layer.weight}`);
  if (layer.residency !== undefined && !RESIDENCIES.includes(layer.residency))
    bad(`residency must be one of ${RESIDENCIES.join(', ')}`);
  if (layer.maxBatchSize != null && !(Number.isSafeInteger(layer.maxBatchSize) && layer.maxBatchSize >= 1))
    bad(`max_batch_size must be a positive integer`);
  if (layer.maxQueueDelayUs != null && !(layer.maxQueueDelayUs >= 0 && Number.isFinite(layer.maxQueueDelayUs)))
    bad(`max_queue_delay_us must be >= 0`);
}

/**
 * The one owner of per-model policy: node.yaml's `scheduler.models`, then settings persisted by
 * the control layer (restored at start), then live changes, each layer overriding the one before.
 * resolve() is what a version is built with and what the scheduler and weight cache apply.
 */
export class Policy {
  readonly #configured: Readonly<Record<string, ModelPolicy>>;
  readonly #persisted = new Map<string, PolicyLayer>();
  readonly #live = new Map<string, PolicyLayer>();

  constructor(
    configured: Readonly<Record<string, ModelPolicy>>,
    readonly defaultResidency: Residency = 'system',
  ) {
    this.#configured = configured;
  }

  resolve(model: string): ModelPolicy {
    const base: ModelPolicy = this.#configured[model] ?? {
      weight: 1,
      residency: this.defaultResidency,
      maxBatchSize: null,
      maxQueueDelayUs: null,
    };
    return { ...base, ...this.#persisted.get(model), ...this.#live.get(model) };
  }

  /** Replaces the persisted layer of a model (the control layer's store, read at start). */
  setPersisted(model: string, layer: PolicyLayer): void {
    checkPolicyLayer(model, layer);
    this.#persisted.set(model, { ...layer });
  }

  /** Merges a live change over what is set; returns the policy now resolved. */
  applyLive(model: string, change: PolicyLayer): ModelPolicy {
    checkPolicyLayer(model, change);
    this.#live.set(model, { ...this.#live.get(model), ...dropUndefined(change) });
    return this.resolve(model);
  }

  /** The live and persisted layers follow a renamed model. */
  rename(from: string, to: string): void {
    for (const layers of [this.#persisted, this.#live]) {
      const l = layers.get(from);
      if (l === undefined) continue;
      layers.delete(from);
      layers.set(to, l);
    }
  }
}

function dropUndefined(layer: PolicyLayer): PolicyLayer {
  return Object.fromEntries(Object.entries(layer).filter(([, v]) => v !== undefined)) as PolicyLayer;
}
