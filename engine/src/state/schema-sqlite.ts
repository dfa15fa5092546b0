/**
 * Operations state, SQLite dialect (the default store under cache_dir). schema-pg.ts declares the
 * same tables with the same keys for PostgreSQL; store.ts reads and writes both through these
 * declarations. Timestamps are epoch milliseconds; JSON values are stored as text.
 */
import { index, integer, primaryKey, real, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';

export const tokens = sqliteTable('tokens', {
  /** Public part of the token (it is also in the token text), shown in lists and the audit log. */
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  scope: text('scope').notNull(),
  /** sha256 of the whole token text; the token itself is never stored. */
  hash: text('hash').notNull().unique(),
  createdAt: integer('created_at').notNull(),
  createdBy: text('created_by').notNull(),
  expiresAt: integer('expires_at'),
  revokedAt: integer('revoked_at'),
  lastUsedAt: integer('last_used_at'),
});

export const audit = sqliteTable(
  'audit',
  {
    seq: integer('seq').primaryKey({ autoIncrement: true }),
    at: integer('at').notNull(),
    actor: text('actor').notNull(),
    action: text('action').notNull(),
    target: text('target').notNull(),
    before: text('before'),
    after: text('after'),
    /** 'ok' or the error code. */
    result: text('result').notNull(),
    requestId: text('request_id').notNull(),
    idempotencyKey: text('idempotency_key'),
    /** The answer given ({status, body} as JSON), replayed for a retry with the same key. */
    response: text('response'),
  },
  (t) => [uniqueIndex('audit_actor_key').on(t.actor, t.idempotencyKey)],
);

export const events = sqliteTable('events', {
  seq: integer('seq').primaryKey({ autoIncrement: true }),
  at: integer('at').notNull(),
  kind: text('kind').notNull(),
  model: text('model'),
  data: text('data').notNull(),
});

export const uploads = sqliteTable('uploads', {
  id: text('id').primaryKey(),
  createdAt: integer('created_at').notNull(),
  createdBy: text('created_by').notNull(),
  filename: text('filename').notNull(),
  model: text('model').notNull(),
  sizeBytes: integer('size_bytes').notNull(),
  offsetBytes: integer('offset_bytes').notNull(),
  sha256: text('sha256'),
  state: text('state').notNull(),
  error: text('error'),
  updatedAt: integer('updated_at').notNull(),
});

/** Desired per-model policy set from the API; a null field leaves node.yaml's value in force. */
export const policies = sqliteTable('policies', {
  model: text('model').primaryKey(),
  residency: text('residency'),
  weight: real('weight'),
  maxBatchSize: integer('max_batch_size'),
  maxQueueDelayUs: integer('max_queue_delay_us'),
  updatedAt: integer('updated_at').notNull(),
  updatedBy: text('updated_by').notNull(),
});

/**
 * The fleet's placement as the operator set it through the gateway (add/remove a replica, move):
 * one row per model the operator touched, per fleet (the supervisor's host name, or `hloserve gateway --fleet`: nodes sharing
 * one PostgreSQL each keep their own, since worker names repeat across nodes). Null replicas or
 * pinned leave that part to the startup flags and measured load. The supervisor's gateway reads
 * its fleet's rows at start. (Migration 0001's model-keyed `placements` table, which this one
 * replaced in 0002, is dropped.)
 */
export const placements = sqliteTable(
  'fleet_placements',
  {
    fleet: text('fleet').notNull(),
    model: text('model').notNull(),
    replicas: integer('replicas'),
    /** JSON array of worker names the model is kept on until released. */
    pinned: text('pinned'),
    updatedAt: integer('updated_at').notNull(),
    updatedBy: text('updated_by').notNull(),
  },
  (t) => [primaryKey({ columns: [t.fleet, t.model] })],
);

export const settings = sqliteTable('settings', {
  key: text('key').primaryKey(),
  value: text('value').notNull(),
  updatedAt: integer('updated_at').notNull(),
  updatedBy: text('updated_by').notNull(),
});

/** Per-model samples: resolution 's' (kept 15 minutes) and 'm' (kept a day). */
export const metricSamples = sqliteTable(
  'metric_samples',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    model: text('model').notNull(),
    resolution: text('resolution').notNull(),
    at: integer('at').notNull(),
    requestsPerSecond: real('requests_per_second').notNull(),
    p50Ms: real('p50_ms'),
    p99Ms: real('p99_ms'),
    queueDepth: integer('queue_depth').notNull(),
    residentBytes: integer('resident_bytes').notNull(),
    loads: integer('loads').notNull(),
    evictions: integer('evictions').notNull(),
  },
  (t) => [index('metric_samples_model_at').on(t.model, t.resolution, t.at)],
);
