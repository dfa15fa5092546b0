/**
 * Where the operator's placement (replica counts, pins) and its audit trail live. The gateway
 * package holds no database: whoever runs it hands in a PlacementState. The supervisor hands in
 * one over the engine's state store (engine/src/supervisor/placement-state.ts), so a restarted
 * supervisor comes back with the operator's placement and the audit survives; the standalone
 * gateway without one keeps both in memory (the last 1000 audit entries).
 */

/** What the operator set for one model: null fields are left to the startup flags and measured load. */
export interface OperatorPlacement {
  readonly model: string;
  readonly replicas: number | null;
  /** Kept on exactly these workers until released. */
  readonly pinned: readonly string[] | null;
}

export interface AuditEntry {
  readonly seq: number;
  readonly at: string;
  readonly actor: string;
  readonly actorName: string;
  readonly action: string;
  readonly target: string;
  readonly before: unknown;
  readonly after: unknown;
}

export type AuditRecord = Omit<AuditEntry, 'seq' | 'at'>;

export interface PlacementState {
  /** Every model the operator has set something for. */
  load(): Promise<OperatorPlacement[]>;
  /** Stores one model's operator placement and its audit entry (the entry as stored). */
  save(placement: OperatorPlacement, audit: AuditRecord): Promise<AuditEntry>;
  /** Newest first. */
  listAudit(limit: number): Promise<AuditEntry[]>;
}

export class MemoryPlacementState implements PlacementState {
  private readonly placements = new Map<string, OperatorPlacement>();
  private readonly entries: AuditEntry[] = [];
  private seq = 0;

  constructor(private readonly keep = 1000) {}

  load(): Promise<OperatorPlacement[]> {
    return Promise.resolve([...this.placements.values()]);
  }

  save(placement: OperatorPlacement, audit: AuditRecord): Promise<AuditEntry> {
    this.placements.set(placement.model, placement);
    const entry: AuditEntry = { seq: ++this.seq, at: new Date().toISOString(), ...audit };
    this.entries.push(entry);
    if (this.entries.length > this.keep) this.entries.shift();
    return Promise.resolve(entry);
  }

  listAudit(limit: number): Promise<AuditEntry[]> {
    return Promise.resolve(this.entries.slice(-limit).reverse());
  }
}
