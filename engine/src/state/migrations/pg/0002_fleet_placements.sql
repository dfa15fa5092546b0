CREATE TABLE "fleet_placements" (
	"fleet" text NOT NULL,
	"model" text NOT NULL,
	"replicas" integer,
	"pinned" text,
	"updated_at" bigint NOT NULL,
	"updated_by" text NOT NULL,
	CONSTRAINT "fleet_placements_fleet_model_pk" PRIMARY KEY("fleet","model")
);
--> statement-breakpoint
DROP TABLE "placements" CASCADE;