CREATE TABLE `audit` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`at` integer NOT NULL,
	`actor` text NOT NULL,
	`action` text NOT NULL,
	`target` text NOT NULL,
	`before` text,
	`after` text,
	`result` text NOT NULL,
	`request_id` text NOT NULL,
	`idempotency_key` text,
	`response` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `audit_actor_key` ON `audit` (`actor`,`idempotency_key`);--> statement-breakpoint
CREATE TABLE `events` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`at` integer NOT NULL,
	`kind` text NOT NULL,
	`model` text,
	`data` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `metric_samples` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`model` text NOT NULL,
	`resolution` text NOT NULL,
	`at` integer NOT NULL,
	`requests_per_second` real NOT NULL,
	`p50_ms` real,
	`p99_ms` real,
	`queue_depth` integer NOT NULL,
	`resident_bytes` integer NOT NULL,
	`loads` integer NOT NULL,
	`evictions` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `metric_samples_model_at` ON `metric_samples` (`model`,`resolution`,`at`);--> statement-breakpoint
CREATE TABLE `policies` (
	`model` text PRIMARY KEY NOT NULL,
	`residency` text,
	`weight` real,
	`max_batch_size` integer,
	`max_queue_delay_us` integer,
	`updated_at` integer NOT NULL,
	`updated_by` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `settings` (
	`key` text PRIMARY KEY NOT NULL,
	`value` text NOT NULL,
	`updated_at` integer NOT NULL,
	`updated_by` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `tokens` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`scope` text NOT NULL,
	`hash` text NOT NULL,
	`created_at` integer NOT NULL,
	`created_by` text NOT NULL,
	`expires_at` integer,
	`revoked_at` integer,
	`last_used_at` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `tokens_hash_unique` ON `tokens` (`hash`);--> statement-breakpoint
CREATE TABLE `uploads` (
	`id` text PRIMARY KEY NOT NULL,
	`created_at` integer NOT NULL,
	`created_by` text NOT NULL,
	`filename` text NOT NULL,
	`model` text NOT NULL,
	`size_bytes` integer NOT NULL,
	`offset_bytes` integer NOT NULL,
	`sha256` text,
	`state` text NOT NULL,
	`error` text,
	`updated_at` integer NOT NULL
);
