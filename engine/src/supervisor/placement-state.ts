/**
 * The gateway's PlacementState over the engine's state store: the operator's replica counts and
 * pins in the `fleet_placements` table, each action in the append-only `audit` table (action
 * `placement.*`, beside the control API's own records). The supervisor opens the store the
 * workers' consoles use (console.state_url, SQLite under cache_dir by default), so a restarted
 * supervisor's gateway comes back with the operator's placement. Rows are per fleet (the
 * supervisor's host name): nodes sharing one PostgreSQL name their workers alike, and each
 * node's placement is its own. The audit is the store's one log, shared like the rest of it.
 */
import { randomUUID } from 'node:crypto';
import type { AuditEntry, AuditRecord, OperatorPlacement, PlacementState } from '@hloserve/gateway';
import type { AuditRow, Store } from '../state/store.js';

const PREFIX = 'placement.';

export class StorePlacementState implements PlacementState {
  constructor(
    private readonly store: Store,
    private readonly fleet: string,
    private readonly now: () => number = Date.now,
  ) {}

  async load(): Promise<OperatorPlacement[]> {
    const rows = await this.store.listPlacements(this.fleet);
    return rows.map((r) => ({
      model: r.model,
      replicas: r.replicas,
      pinned: r.pinned === null ? null : (JSON.parse(r.pinned) as string[]),
    }));
  }

  async save(p: OperatorPlacement, audit: AuditRecord): Promise<AuditEntry> {
    const at = this.now();
    await this.store.upsertPlacement({
      fleet: this.fleet,
      model: p.model,
      replicas: p.replicas,
      pinned: p.pinned === null ? null : JSON.stringify(p.pinned),
      updatedAt: at,
      updatedBy: audit.actor,
    });
    const seq = await this.store.appendAudit({
      at,
      actor: audit.actor,
      action: audit.action,
      target: audit.target,
      before: JSON.stringify(audit.before),
      after: JSON.stringify(audit.after),
      result: 'ok',
      requestId: randomUUID(),
      idempotencyKey: null,
      response: null,
    });
    return { ...audit, seq, at: new Date(at).toISOString() };
  }

  async listAudit(limit: number): Promise<AuditEntry[]> {
    const rows = await this.store.listAudit({ limit, actionPrefix: PREFIX });
    const names = new Map<string, string>();
    for (const r of rows) if (!names.has(r.actor)) names.set(r.actor, await this.actorName(r.actor));
    return rows.map((r) => entry(r, names.get(r.actor)!));
  }

  /** The token's name for a `token:<id>` actor (the audit table keeps the actor only). */
  private async actorName(actor: string): Promise<string> {
    if (!actor.startsWith('token:')) return actor;
    return (await this.store.token(actor.slice('token:'.length)))?.name ?? actor;
  }
}

const parse = (text: string | null): unknown => (text === null ? null : JSON.parse(text));

function entry(r: AuditRow, actorName: string): AuditEntry {
  return {
    seq: r.seq,
    at: new Date(r.at).toISOString(),
    actor: r.actor,
    actorName,
    action: r.action,
    target: r.target,
    before: parse(r.before),
    after: parse(r.after),
  };
}
