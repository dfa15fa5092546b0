import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { drizzle as drizzleSqlite, type BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import { migrate as migrateSqlite } from 'drizzle-orm/better-sqlite3/migrator';
import { ServeError } from '@hloserve/common/errors';
import * as sqliteSchema from './schema-sqlite.js';
import { Store, type StoreProbe } from './store.js';

// The committed migrations stay in the source tree (tsc does not copy them); from
// engine/dist/src/state/ that is engine/src/state/migrations/.
const migrationsRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'src', 'state', 'migrations');

// better-sqlite3's addon by its path: without one, the package's `bindings` helper stats a dozen
// candidate paths on every start to find it.
const sqliteAddon = ((): string | undefined => {
  try {
    return createRequire(import.meta.url).resolve('better-sqlite3/build/Release/better_sqlite3.node');
  } catch {
    return undefined;
  }
})();

export interface StoreLocation {
  /** postgres:// or postgresql:// URL; otherwise SQLite. */
  readonly url?: string | null;
  /** SQLite file (default `<cacheDir>/state/hloserve.sqlite`); ':memory:' for a throwaway store. */
  readonly sqlitePath?: string;
  readonly cacheDir: string;
}

export const isPostgresUrl = (url: string | null | undefined): boolean =>
  url !== null && url !== undefined && /^postgres(ql)?:\/\//.test(url);

/** Opens the store and applies the committed migrations before anything reads it. */
export async function openStore(loc: StoreLocation): Promise<Store> {
  if (loc.url && isPostgresUrl(loc.url)) {
    const url = loc.url;
    // Imported only here: the PostgreSQL client costs a fifth of a second of every start otherwise,
    // and the PostgreSQL schema's table definitions ~5-10 ms of a start's JS thread.
    const [{ default: pg }, { drizzle: drizzlePg }, { migrate: migratePg }, pgSchema] = await Promise.all([
      import('pg'),
      import('drizzle-orm/node-postgres'),
      import('drizzle-orm/node-postgres/migrator'),
      import('./schema-pg.js'),
    ]);
    const pool = new pg.Pool({ connectionString: url, max: 4 });
    try {
      const db = drizzlePg(pool);
      await migratePg(db, { migrationsFolder: join(migrationsRoot, 'pg') });
      const probe: StoreProbe = {
        location: withoutCredentials(url),
        known: knownMigrations('pg'),
        applied: async () => {
          // drizzle keeps PostgreSQL's migration log in its own schema; created_at is a bigint.
          const r = await pool.query<{ n: number; last: string | null }>(
            'select count(*)::int as n, max(created_at)::text as last from drizzle.__drizzle_migrations',
          );
          const row = r.rows[0];
          return { count: row?.n ?? 0, lastWhen: row?.last == null ? null : Number(row.last) };
        },
      };
      // One implementation serves both dialects (store.ts says why); the cast is only of types.
      return new Store(
        'postgres',
        db as unknown as BetterSQLite3Database,
        pgSchema as unknown as typeof sqliteSchema,
        () => pool.end(),
        probe,
      );
    } catch (err) {
      await pool.end().catch(() => undefined);
      throw new ServeError('HLO_ERR_CONFIG_INVALID', `state store ${redact(url)}: ${(err as Error).message}`, {
        cause: err,
      });
    }
  }
  if (loc.url && !loc.url.startsWith('sqlite:'))
    throw new ServeError(
      'HLO_ERR_CONFIG_INVALID',
      `state store URL must be postgres://… or sqlite:<path>, got '${redact(loc.url)}'`,
    );
  const path = loc.url
    ? loc.url.slice('sqlite:'.length)
    : (loc.sqlitePath ?? join(loc.cacheDir, 'state', 'hloserve.sqlite'));
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const sqlite = new Database(path, sqliteAddon === undefined ? {} : { nativeBinding: sqliteAddon });
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('busy_timeout = 5000');
  const db = drizzleSqlite(sqlite);
  migrateSqlite(db, { migrationsFolder: join(migrationsRoot, 'sqlite') });
  const applied = sqlite.prepare('select count(*) as n, max(created_at) as last from __drizzle_migrations');
  const probe: StoreProbe = {
    location: path,
    known: knownMigrations('sqlite'),
    applied: async () => {
      const row = applied.get() as { n: number; last: number | null };
      return { count: row.n, lastWhen: row.last };
    },
  };
  return new Store('sqlite', db, sqliteSchema, async () => void sqlite.close(), probe);
}

/** The migrations this build ships (drizzle-kit's journal): tag, and the time drizzle records. */
function knownMigrations(dialect: 'sqlite' | 'pg'): StoreProbe['known'] {
  const journal = JSON.parse(readFileSync(join(migrationsRoot, dialect, 'meta', '_journal.json'), 'utf8')) as {
    entries: { tag: string; when: number }[];
  };
  return journal.entries.map((e) => ({ tag: e.tag, when: e.when }));
}

/** postgres://host:port/db: where the store is, without who logs in to it. */
function withoutCredentials(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return redact(url);
  }
}

/** A URL for messages: the password is never logged. */
export function redact(url: string): string {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');
}
