CREATE TABLE "audit" (
	"seq" bigserial PRIMARY KEY NOT NULL,
	"at" bigint NOT NULL,
	"actor" text NOT NULL,
	"action" text NOT NULL,
	"target" text NOT NULL,
	"before" text,
	"after" text,
	"result" text NOT NULL,
	"request_id" text NOT NULL,
	"idempotency_key" text,
	"response" text
);
--> statement-breakpoint
CREATE TABLE "events" (
	"seq" bigserial PRIMARY KEY NOT NULL,
	"at" bigint NOT NULL,
	"kind" text NOT NULL,
	"model" text,
	"data" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "metric_samples" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"model" text NOT NULL,
	"resolution" text NOT NULL,
	"at" bigint NOT NULL,
	"requests_per_second" double precision NOT NULL,
	"p50_ms" double precision,
	"p99_ms" double precision,
	"queue_depth" integer NOT NULL,
	"resident_bytes" bigint NOT NULL,
	"loads" integer NOT NULL,
	"evictions" integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE "policies" (
	"model" text PRIMARY KEY NOT NULL,
	"residency" text,
	"weight" double precision,
	"max_batch_size" integer,
	"max_queue_delay_us" integer,
	"updated_at" bigint NOT NULL,
	"updated_by" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "settings" (
	"key" text PRIMARY KEY NOT NULL,
	"value" text NOT NULL,
	"updated_at" bigint NOT NULL,
	"updated_by" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "tokens" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"scope" text NOT NULL,
	"hash" text NOT NULL,
	"created_at" bigint NOT NULL,
	"created_by" text NOT NULL,
	"expires_at" bigint,
	"revoked_at" bigint,
	"last_used_at" bigint,
	CONSTRAINT "tokens_hash_unique" UNIQUE("hash")
);
--> statement-breakpoint
CREATE TABLE "uploads" (
	"id" text PRIMARY KEY NOT NULL,
	"created_at" bigint NOT NULL,
	"created_by" text NOT NULL,
	"filename" text NOT NULL,
	"model" text NOT NULL,
	"size_bytes" bigint NOT NULL,
	"offset_bytes" bigint NOT NULL,
	"sha256" text,
	"state" text NOT NULL,
	"error" text,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX "audit_actor_key" ON "audit" USING btree ("actor","idempotency_key");--> statement-breakpoint
CREATE INDEX "metric_samples_model_at" ON "metric_samples" USING btree ("model","resolution","at");