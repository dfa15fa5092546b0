/**
 * The operations store: every read and write of operations state goes through this class, on
 * SQLite or PostgreSQL alike. Both schemas declare the same tables with the same keys and JS
 * types, and drizzle's query builders share their shape across dialects, so one implementation
 * serves both (open-store.ts hands PostgreSQL's database and tables in under the SQLite types).
 * Queries are awaited, never run synchronously, so the same code is correct on either driver.
 *
 * The audit log is append-only: this class has no way to change or delete an audit record.
 */
import { and, asc, desc, eq, gt, gte, lt, lte, sql } from 'drizzle-orm';
import type { BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import { setImmediate as yieldToIo } from 'node:timers/promises';
import { setClampedTimeout } from '@hloserve/common/timers';
import * as schema from './schema-sqlite.js';

export type TokenRow = typeof schema.tokens.$inferSelect;
export type AuditRow = typeof schema.audit.$inferSelect;
export type AuditInsert = Omit<typeof schema.audit.$inferInsert, 'seq'>;
export type EventRow = typeof schema.events.$inferSelect;
/** An event as stored: its data already JSON. */
export type EventInsert = Omit<typeof schema.events.$inferInsert, 'seq'>;
export type UploadRow = typeof schema.uploads.$inferSelect;
export type PolicyRow = typeof schema.policies.$inferSelect;
export type SettingRow = typeof schema.settings.$inferSelect;
export type PlacementRow = typeof schema.placements.$inferSelect;
export type MetricSampleRow = typeof schema.metricSamples.$inferSelect;
export type MetricSampleInsert = Omit<typeof schema.metricSamples.$inferInsert, 'id'>;

export type StoreDialect = 'sqlite' | 'postgres';

/** What the settings screen shows of the store: where it is, whether it answers, how fast. */
export interface StoreHealth {
  readonly dialect: StoreDialect;
  /** The SQLite file, or postgres://host:port/db (never the user or password). */
  readonly location: string;
  readonly reachable: boolean;
  /** One round trip to the store (the migrations query), ms; null when it did not answer. */
  readonly latencyMs: number | null;
  /** Migrations applied against those this build ships; latest: the newest applied one's tag. */
  readonly migrations: { readonly applied: number; readonly known: number; readonly latest: string | null } | null;
  /** Why the store did not answer. */
  readonly error: string | null;
}

/** The dialect-specific part of a health check, made by openStore(). */
export interface StoreProbe {
  readonly location: string;
  /** The known migrations, oldest first: tag and the time drizzle records for it. */
  readonly known: readonly { readonly tag: string; readonly when: number }[];
  /** Applied migrations: how many, and the newest one's recorded time. */
  readonly applied: () => Promise<{ count: number; lastWhen: number | null }>;
}

/**
 * Rows per INSERT of a batch (metric samples are ten parameters a row, events four): within the
 * 32,766 parameters SQLite takes and PostgreSQL's 65,535, and short enough to build that the
 * serving thread, given a turn between two of them, is not held long (SQLite's driver is
 * synchronous, and drizzle builds a statement on the calling thread).
 */
const ROWS_PER_INSERT = 500;

/** A store that does not answer a health probe in this long is reported unreachable. */
const HEALTH_TIMEOUT_MS = 2000;

export class Store {
  readonly dialect: StoreDialect;
  readonly #db: BetterSQLite3Database;
  readonly #t: typeof schema;
  readonly #close: () => Promise<void>;
  readonly #probe: StoreProbe;

  /** @internal made by openStore() */
  constructor(
    dialect: StoreDialect,
    db: BetterSQLite3Database,
    tables: typeof schema,
    close: () => Promise<void>,
    probe: StoreProbe,
  ) {
    this.dialect = dialect;
    this.#db = db;
    this.#t = tables;
    this.#close = close;
    this.#probe = probe;
  }

  close(): Promise<void> {
    return this.#close();
  }

  /** Asks the store for its applied migrations, timing the round trip; never throws. */
  async health(): Promise<StoreHealth> {
    const base = { dialect: this.dialect, location: this.#probe.location };
    const t0 = performance.now();
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const timeout = new Promise<never>((_, reject) => {
        timer = setClampedTimeout(() => reject(new Error(`no answer in ${HEALTH_TIMEOUT_MS} ms`)), HEALTH_TIMEOUT_MS);
      });
      const { count, lastWhen } = await Promise.race([this.#probe.applied(), timeout]);
      const latencyMs = performance.now() - t0;
      const latest = this.#probe.known.find((m) => m.when === lastWhen)?.tag ?? null;
      return {
        ...base,
        reachable: true,
        latencyMs,
        migrations: { applied: count, known: this.#probe.known.length, latest },
        error: null,
      };
    } catch (err) {
      return { ...base, reachable: false, latencyMs: null, migrations: null, error: (err as Error).message };
    } finally {
      clearTimeout(timer);
    }
  }

  // ---- tokens ---------------------------------------------------------------------------------

  async insertToken(row: TokenRow): Promise<void> {
    await this.#db.insert(this.#t.tokens).values(row);
  }

  async tokenByHash(hash: string): Promise<TokenRow | undefined> {
    const t = this.#t.tokens;
    const rows = await this.#db.select().from(t).where(eq(t.hash, hash)).limit(1);
    return rows[0];
  }

  async token(id: string): Promise<TokenRow | undefined> {
    const t = this.#t.tokens;
    const rows = await this.#db.select().from(t).where(eq(t.id, id)).limit(1);
    return rows[0];
  }

  async listTokens(): Promise<TokenRow[]> {
    const t = this.#t.tokens;
    return this.#db.select().from(t).orderBy(asc(t.createdAt), asc(t.id));
  }

  /** Marks a token revoked (the row stays for the audit trail); false if unknown or already revoked. */
  async revokeToken(id: string, at: number): Promise<boolean> {
    const t = this.#t.tokens;
    const rows = await this.#db
      .update(t)
      .set({ revokedAt: at })
      .where(and(eq(t.id, id), sql`${t.revokedAt} is null`))
      .returning({ id: t.id });
    return rows.length === 1;
  }

  async touchToken(id: string, at: number): Promise<void> {
    const t = this.#t.tokens;
    await this.#db.update(t).set({ lastUsedAt: at }).where(eq(t.id, id));
  }

  // ---- audit (append-only) ----------------------------------------------------------------------

  async appendAudit(rec: AuditInsert): Promise<number> {
    const a = this.#t.audit;
    const rows = await this.#db.insert(a).values(rec).returning({ seq: a.seq });
    return rows[0]!.seq;
  }

  async auditByKey(actor: string, idempotencyKey: string): Promise<AuditRow | undefined> {
    const a = this.#t.audit;
    const rows = await this.#db
      .select()
      .from(a)
      .where(and(eq(a.actor, actor), eq(a.idempotencyKey, idempotencyKey)))
      .limit(1);
    return rows[0];
  }

  /** Newest first; `beforeSeq` pages backwards; `actionPrefix` keeps actions starting with it. */
  async listAudit(o: {
    beforeSeq?: number;
    limit: number;
    target?: string;
    actionPrefix?: string;
  }): Promise<AuditRow[]> {
    const a = this.#t.audit;
    const where = and(
      o.beforeSeq !== undefined ? lt(a.seq, o.beforeSeq) : undefined,
      o.target !== undefined ? eq(a.target, o.target) : undefined,
      // substr, not LIKE: the two dialects escape LIKE's wildcards differently.
      o.actionPrefix !== undefined
        ? sql`substr(${a.action}, 1, ${o.actionPrefix.length}) = ${o.actionPrefix}`
        : undefined,
    );
    return this.#db.select().from(a).where(where).orderBy(desc(a.seq)).limit(o.limit);
  }

  // ---- lifecycle events -------------------------------------------------------------------------

  async appendEvent(e: { at: number; kind: string; model: string | null; data: unknown }): Promise<number> {
    return (await this.appendEvents([{ at: e.at, kind: e.kind, model: e.model, data: JSON.stringify(e.data) }]))[0]!;
  }

  /**
   * Stores events in their order; answers their seqs in the same order. One statement numbers its
   * rows in the order of its VALUES on either dialect, so the seqs it returns, sorted, are the
   * events' in order.
   */
  async appendEvents(events: readonly EventInsert[]): Promise<number[]> {
    const ev = this.#t.events;
    const seqs: number[] = [];
    await inChunks(events, async (chunk) => {
      const rows = await this.#db.insert(ev).values(chunk).returning({ seq: ev.seq });
      for (const r of rows.map((x) => x.seq).sort((a, b) => a - b)) seqs.push(r);
    });
    return seqs;
  }

  /** Removes the events up to and including `seq` (the oldest; the newest are kept). */
  async pruneEvents(throughSeq: number): Promise<void> {
    const ev = this.#t.events;
    await this.#db.delete(ev).where(lte(ev.seq, throughSeq));
  }

  /** Oldest first after `afterSeq`. */
  async listEvents(o: { afterSeq?: number; limit: number; model?: string }): Promise<EventRow[]> {
    const ev = this.#t.events;
    const where = and(
      o.afterSeq !== undefined ? gt(ev.seq, o.afterSeq) : undefined,
      o.model !== undefined ? eq(ev.model, o.model) : undefined,
    );
    return this.#db.select().from(ev).where(where).orderBy(asc(ev.seq)).limit(o.limit);
  }

  // ---- desired policies ---------------------------------------------------------------------------

  async upsertPolicy(row: PolicyRow): Promise<void> {
    const p = this.#t.policies;
    const { model: _model, ...set } = row;
    await this.#db.insert(p).values(row).onConflictDoUpdate({ target: p.model, set });
  }

  async policy(model: string): Promise<PolicyRow | undefined> {
    const p = this.#t.policies;
    const rows = await this.#db.select().from(p).where(eq(p.model, model)).limit(1);
    return rows[0];
  }

  async listPolicies(): Promise<PolicyRow[]> {
    const p = this.#t.policies;
    return this.#db.select().from(p).orderBy(asc(p.model));
  }

  async deletePolicy(model: string): Promise<boolean> {
    const p = this.#t.policies;
    const rows = await this.#db.delete(p).where(eq(p.model, model)).returning({ model: p.model });
    return rows.length === 1;
  }

  // ---- the fleet's operator placement (the gateway's) ---------------------------------------------

  async upsertPlacement(row: PlacementRow): Promise<void> {
    const p = this.#t.placements;
    const { fleet: _fleet, model: _model, ...set } = row;
    await this.#db
      .insert(p)
      .values(row)
      .onConflictDoUpdate({ target: [p.fleet, p.model], set });
  }

  /** One fleet's rows, by model. */
  async listPlacements(fleet: string): Promise<PlacementRow[]> {
    const p = this.#t.placements;
    return this.#db.select().from(p).where(eq(p.fleet, fleet)).orderBy(asc(p.model));
  }

  // ---- settings ---------------------------------------------------------------------------------

  async setting(key: string): Promise<SettingRow | undefined> {
    const s = this.#t.settings;
    const rows = await this.#db.select().from(s).where(eq(s.key, key)).limit(1);
    return rows[0];
  }

  async listSettings(): Promise<SettingRow[]> {
    const s = this.#t.settings;
    return this.#db.select().from(s).orderBy(asc(s.key));
  }

  async setSetting(row: SettingRow): Promise<void> {
    const s = this.#t.settings;
    const { key: _key, ...set } = row;
    await this.#db.insert(s).values(row).onConflictDoUpdate({ target: s.key, set });
  }

  /** Deletes only if the stored value is `value` (a compare-and-delete); true if it did. */
  async takeSetting(key: string, value: string): Promise<boolean> {
    const s = this.#t.settings;
    const rows = await this.#db
      .delete(s)
      .where(and(eq(s.key, key), eq(s.value, value)))
      .returning({ key: s.key });
    return rows.length === 1;
  }

  // ---- uploads ----------------------------------------------------------------------------------

  async insertUpload(row: UploadRow): Promise<void> {
    await this.#db.insert(this.#t.uploads).values(row);
  }

  async updateUpload(id: string, patch: Partial<Omit<UploadRow, 'id'>>): Promise<void> {
    const u = this.#t.uploads;
    await this.#db.update(u).set(patch).where(eq(u.id, id));
  }

  async upload(id: string): Promise<UploadRow | undefined> {
    const u = this.#t.uploads;
    const rows = await this.#db.select().from(u).where(eq(u.id, id)).limit(1);
    return rows[0];
  }

  async listUploads(limit: number): Promise<UploadRow[]> {
    const u = this.#t.uploads;
    return this.#db.select().from(u).orderBy(desc(u.createdAt)).limit(limit);
  }

  // ---- metric history ---------------------------------------------------------------------------

  async appendMetricSamples(rows: readonly MetricSampleInsert[]): Promise<void> {
    await inChunks(rows, async (chunk) => {
      await this.#db.insert(this.#t.metricSamples).values(chunk);
    });
  }

  async listMetricSamples(model: string, resolution: 's' | 'm', sinceAt: number): Promise<MetricSampleRow[]> {
    const m = this.#t.metricSamples;
    return this.#db
      .select()
      .from(m)
      .where(and(eq(m.model, model), eq(m.resolution, resolution), gte(m.at, sinceAt)))
      .orderBy(asc(m.at));
  }

  async pruneMetricSamples(resolution: 's' | 'm', beforeAt: number): Promise<void> {
    const m = this.#t.metricSamples;
    await this.#db.delete(m).where(and(eq(m.resolution, resolution), lt(m.at, beforeAt)));
  }
}

/** `write` for each ROWS_PER_INSERT rows in turn, with a turn of the event loop between two. */
async function inChunks<T>(rows: readonly T[], write: (chunk: T[]) => Promise<void>): Promise<void> {
  for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) {
    if (i > 0) await yieldToIo();
    await write(rows.slice(i, i + ROWS_PER_INSERT));
  }
}
