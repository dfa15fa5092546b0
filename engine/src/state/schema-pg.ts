/**
 * Operations state, PostgreSQL dialect (several nodes sharing one console). The same tables and
 * keys as schema-sqlite.ts, which is the reference for what each column holds.
 */
import {
  bigint,
  bigserial,
  doublePrecision,
  index,
  integer,
  pgTable,
  primaryKey,
  text,
  uniqueIndex,
} from 'drizzle-orm/pg-core';

const ms = (name: string) => bigint(name, { mode: 'number' });

export const tokens = pgTable('tokens', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  scope: text('scope').notNull(),
  hash: text('hash').notNull().unique(),
  createdAt: ms('created_at').notNull(),
  createdBy: text('created_by').notNull(),
  expiresAt: ms('expires_at'),
  revokedAt: ms('revoked_at'),
  lastUsedAt: ms('last_used_at'),
});

export const audit = pgTable(
  'audit',
  {
    seq: bigserial('seq', { mode: 'number' }).primaryKey(),
    at: ms('at').notNull(),
    actor: text('actor').notNull(),
    action: text('action').notNull(),
    target: text('target').notNull(),
    before: text('before'),
    after: text('after'),
    result: text('result').notNull(),
    requestId: text('request_id').notNull(),
    idempotencyKey: text('idempotency_key'),
    response: text('response'),
  },
  (t) => [uniqueIndex('audit_actor_key').on(t.actor, t.idempotencyKey)],
);

export const events = pgTable('events', {
  seq: bigserial('seq', { mode: 'number' }).primaryKey(),
  at: ms('at').notNull(),
  kind: text('kind').notNull(),
  model: text('model'),
  data: text('data').notNull(),
});

export const uploads = pgTable('uploads', {
  id: text('id').primaryKey(),
  createdAt: ms('created_at').notNull(),
  createdBy: text('created_by').notNull(),
  filename: text('filename').notNull(),
  model: text('model').notNull(),
  sizeBytes: ms('size_bytes').notNull(),
  offsetBytes: ms('offset_bytes').notNull(),
  sha256: text('sha256'),
  state: text('state').notNull(),
  error: text('error'),
  updatedAt: ms('updated_at').notNull(),
});

export const policies = pgTable('policies', {
  model: text('model').primaryKey(),
  residency: text('residency'),
  weight: doublePrecision('weight'),
  maxBatchSize: integer('max_batch_size'),
  maxQueueDelayUs: integer('max_queue_delay_us'),
  updatedAt: ms('updated_at').notNull(),
  updatedBy: text('updated_by').notNull(),
});

export const placements = pgTable(
  'fleet_placements',
  {
    fleet: text('fleet').notNull(),
    model: text('model').notNull(),
    replicas: integer('replicas'),
    pinned: text('pinned'),
    updatedAt: ms('updated_at').notNull(),
    updatedBy: text('updated_by').notNull(),
  },
  (t) => [primaryKey({ columns: [t.fleet, t.model] })],
);

export const settings = pgTable('settings', {
  key: text('key').primaryKey(),
  value: text('value').notNull(),
  updatedAt: ms('updated_at').notNull(),
  updatedBy: text('updated_by').notNull(),
});

export const metricSamples = pgTable(
  'metric_samples',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    model: text('model').notNull(),
    resolution: text('resolution').notNull(),
    at: ms('at').notNull(),
    requestsPerSecond: doublePrecision('requests_per_second').notNull(),
    p50Ms: doublePrecision('p50_ms'),
    p99Ms: doublePrecision('p99_ms'),
    queueDepth: integer('queue_depth').notNull(),
    residentBytes: ms('resident_bytes').notNull(),
    loads: integer('loads').notNull(),
    evictions: integer('evictions').notNull(),
  },
  (t) => [index('metric_samples_model_at').on(t.model, t.resolution, t.at)],
);
