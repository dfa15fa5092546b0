/**
 * The gateway's audit log of placement actions: one entry per action that changed something,
 * numbered, with who did it (the token's actor and name as the worker that checked it reported),
 * before and after. Kept in memory (the last 1000) and written as a log record, which the
 * supervisor passes on with the gateway's other records; the gateway holds no state store.
 */

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

export class AuditLog {
  private readonly entries: AuditEntry[] = [];
  private seq = 0;

  constructor(
    private readonly write: (entry: AuditEntry) => void,
    private readonly keep = 1000,
  ) {}

  record(e: Omit<AuditEntry, 'seq' | 'at'>): AuditEntry {
    const entry: AuditEntry = { seq: ++this.seq, at: new Date().toISOString(), ...e };
    this.entries.push(entry);
    if (this.entries.length > this.keep) this.entries.shift();
    this.write(entry);
    return entry;
  }

  /** Newest first. */
  list(limit = 500): AuditEntry[] {
    return this.entries.slice(-limit).reverse();
  }
}
