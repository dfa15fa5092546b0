/**
 * Desired state set from the API (per-model policy, the scheduling discipline, the weight budget), persisted in the
 * store and applied again at start. Precedence: a value set through the API wins over node.yaml,
 * which wins over the built-in defaults; a field never set through the API keeps node.yaml's.
 */
import type { Discipline } from '../../config/types.js';
import type { PolicyRow, Store } from '../../state/store.js';
import type { ModelPolicyPatch, ModelPolicyView, ModelPort } from '../api/model-port.js';
import type { AuditedMutations } from '../audit/audited-mutation.js';

export const DISCIPLINE_KEY = 'scheduler.discipline';
export const WEIGHT_BUDGET_KEY = 'weights.budget_bytes';
const RECONCILER = { actor: 'system:reconcile', tokenId: null, name: 'reconcile', scope: 'admin' } as const;

export class DesiredState {
  constructor(
    private readonly store: Store,
    private readonly port: ModelPort,
    private readonly now: () => number = Date.now,
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
   * At start: applies every stored policy to the models the engine has, one audit record per
   * change it made (actor `system:reconcile`, naming who set the value). Models not present
   * keep their stored policy for when they appear.
   */
  async reconcile(mutations: AuditedMutations): Promise<number> {
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
    for (const row of await this.store.listPolicies()) {
      const current = this.port.model(row.model)?.policy;
      if (!current) continue;
      const patch: ModelPolicyPatch = {};
      const p = patch as { -readonly [K in keyof ModelPolicyPatch]: ModelPolicyPatch[K] };
      if (row.residency !== null && row.residency !== current.residency)
        p.residency = row.residency as ModelPolicyView['residency'];
      if (row.weight !== null && row.weight !== current.weight) p.weight = row.weight;
      if (row.maxBatchSize !== null && row.maxBatchSize !== current.maxBatchSize) p.maxBatchSize = row.maxBatchSize;
      if (row.maxQueueDelayUs !== null && row.maxQueueDelayUs !== current.maxQueueDelayUs)
        p.maxQueueDelayUs = row.maxQueueDelayUs;
      if (Object.keys(patch).length === 0) continue;
      await mutations.run(
        { principal: RECONCILER, requestId: 'startup', idempotencyKey: null },
        {
          action: 'model.policy.reconcile',
          target: `model:${row.model}`,
          before: () => current,
          run: async () => ({
            body: null,
            after: { ...(await this.port.setPolicy(row.model, patch)), setBy: row.updatedBy },
          }),
        },
      );
      changes++;
    }
    return changes;
  }
}
