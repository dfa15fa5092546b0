/**
 * Desired state set from the API (per-model policy, the scheduling discipline, the weight budget), persisted in the
 * store and applied again at start. Precedence: a value set through the API wins over node.yaml,
 * which wins over the built-in defaults; a field never set through the API keeps node.yaml's.
 */
import type { Discipline } from '../../config/types.js';
import type { PolicyRow, Store } from '../../state/store.js';
import type { ModelPolicyPatch, ModelPolicyView, ModelPort } from '../api/model-port.js';
import type { AuditedMutations } from '../audit/audited-mutation.js';
import type { Logger } from '../../log.js';

export const DISCIPLINE_KEY = 'scheduler.discipline';
export const WEIGHT_BUDGET_KEY = 'weights.budget_bytes';
const RECONCILER = { actor: 'system:reconcile', tokenId: null, name: 'reconcile', scope: 'admin' } as const;

export class DesiredState {
  /** Per model, the reconcile under way (each model's run one after another). */
  readonly #pending = new Map<string, Promise<boolean>>();
  #unfollow: (() => void) | null = null;

  constructor(
    private readonly store: Store,
    private readonly port: ModelPort,
    private readonly now: () => number = Date.now,
    private readonly log?: Logger,
  ) {}

  /** Applies a policy change to the engine, then records it as desired. */
  async setPolicy(model: string, patch: ModelPolicyPatch, by: string): Promise<ModelPolicyView> {
    const view = await this.port.setPolicy(model, patch);
    const prior = await this.store.policy(model);
    const row: PolicyRow = {
      model,
      residency: prior?.residency ?? null,
      weight: prior?.weight ?? null,
      maxBatchSize: prior?.maxBatchSize ?? null,
      maxQueueDelayUs: prior?.maxQueueDelayUs ?? null,
      updatedAt: this.now(),
      updatedBy: by,
    };
    if (patch.residency !== undefined) row.residency = patch.residency;
    if (patch.weight !== undefined) row.weight = patch.weight;
    if (patch.maxBatchSize !== undefined) row.maxBatchSize = patch.maxBatchSize;
    if (patch.maxQueueDelayUs !== undefined) row.maxQueueDelayUs = patch.maxQueueDelayUs;
    await this.store.upsertPolicy(row);
    return view;
  }

  async setDiscipline(discipline: Discipline, by: string): Promise<void> {
    this.port.setDiscipline(discipline);
    await this.store.setSetting({
      key: DISCIPLINE_KEY,
      value: JSON.stringify(discipline),
      updatedAt: this.now(),
      updatedBy: by,
    });
  }

  async setWeightBudget(bytes: number, by: string): Promise<void> {
    this.port.setWeightBudget(bytes);
    await this.store.setSetting({
      key: WEIGHT_BUDGET_KEY,
      value: JSON.stringify(bytes),
      updatedAt: this.now(),
      updatedBy: by,
    });
  }

  /**
   * At start: applies the stored discipline and every stored policy to the models the engine has,
   * one audit record per change it made (actor `system:reconcile`, naming who set the value), then
   * keeps applying a model's stored policy each time it loads. So the console can start while the
   * startup set is still loading: each model gets its stored policy as it arrives, and settled()
   * says when every one started so far has been applied. Returns the changes made now.
   */
  async reconcile(mutations: AuditedMutations): Promise<number> {
    // Subscribed before the scan: a model that loads meanwhile is seen by one or the other (or
    // both; the second finds nothing left to change).
    this.#unfollow ??= this.port.subscribe((e) => {
      if (e.model !== null && (e.kind === 'model.loaded' || e.kind === 'model.reloaded'))
        void this.#reconcileModel(mutations, e.model);
    });
    let changes = 0;
    const d = await this.store.setting(DISCIPLINE_KEY);
    if (d) {
      const discipline = JSON.parse(d.value) as Discipline;
      if (this.port.worker().discipline !== discipline) {
        await mutations.run(
          { principal: RECONCILER, requestId: 'startup', idempotencyKey: null },
          {
            action: 'settings.reconcile',
            target: 'settings',
            before: () => ({ discipline: this.port.worker().discipline }),
            run: async () => {
              this.port.setDiscipline(discipline);
              return { body: null, after: { discipline, setBy: d.updatedBy } };
            },
          },
        );
        changes++;
      }
    }
    const b = await this.store.setting(WEIGHT_BUDGET_KEY);
    if (b) {
      const bytes = JSON.parse(b.value) as number;
      const before = this.port.worker().devices[0]?.budgetBytes ?? null;
      if (before !== bytes) {
        await mutations.run(
          { principal: RECONCILER, requestId: 'startup', idempotencyKey: null },
          {
            action: 'settings.reconcile',
            target: 'settings',
            before: () => ({ weightBudgetBytes: before }),
            run: async () => {
              this.port.setWeightBudget(bytes);
              return { body: null, after: { weightBudgetBytes: bytes, setBy: b.updatedBy } };
            },
          },
        );
        changes++;
      }
    }
    const rows = await this.store.listPolicies();
    const made = await Promise.all(
      rows.filter((r) => this.port.model(r.model)).map((r) => this.#reconcileModel(mutations, r.model)),
    );
    return changes + made.filter(Boolean).length;
  }

  /** Every model reconcile started so far has finished (a failed one is logged, not thrown). */
  async settled(): Promise<void> {
    while (this.#pending.size > 0) await Promise.all(this.#pending.values());
  }

  /** Stops following the engine's loads. */
  close(): void {
    this.#unfollow?.();
    this.#unfollow = null;
  }

  /** Applies `model`'s stored policy where it differs; one at a time per model. True: changed. */
  #reconcileModel(mutations: AuditedMutations, model: string): Promise<boolean> {
    const prev = this.#pending.get(model) ?? Promise.resolve(false);
    const next = prev
      .then(() => this.#applyStored(mutations, model))
      .catch((err: unknown) => {
        this.log?.error('stored policy not applied', {
          model,
          error: err instanceof Error ? err.message : String(err),
        });
        return false;
      });
    this.#pending.set(model, next);
    void next.then(() => {
      if (this.#pending.get(model) === next) this.#pending.delete(model);
    });
    return next;
  }

  async #applyStored(mutations: AuditedMutations, model: string): Promise<boolean> {
    const row = await this.store.policy(model);
    const current = this.port.model(model)?.policy;
    if (!row || !current) return false;
    const patch: ModelPolicyPatch = {};
    const p = patch as { -readonly [K in keyof ModelPolicyPatch]: ModelPolicyPatch[K] };
    if (row.residency !== null && row.residency !== current.residency)
      p.residency = row.residency as ModelPolicyView['residency'];
    if (row.weight !== null && row.weight !== current.weight) p.weight = row.weight;
    if (row.maxBatchSize !== null && row.maxBatchSize !== current.maxBatchSize) p.maxBatchSize = row.maxBatchSize;
    if (row.maxQueueDelayUs !== null && row.maxQueueDelayUs !== current.maxQueueDelayUs)
      p.maxQueueDelayUs = row.maxQueueDelayUs;
    if (Object.keys(patch).length === 0) return false;
    await mutations.run(
      { principal: RECONCILER, requestId: 'startup', idempotencyKey: null },
      {
        action: 'model.policy.reconcile',
        target: `model:${model}`,
        before: () => current,
        run: async () => ({
          body: null,
          after: { ...(await this.port.setPolicy(model, patch)), setBy: row.updatedBy },
        }),
      },
    );
    return true;
  }
}
