CREATE TABLE `fleet_placements` (
	`fleet` text NOT NULL,
	`model` text NOT NULL,
	`replicas` integer,
	`pinned` text,
	`updated_at` integer NOT NULL,
	`updated_by` text NOT NULL,
	PRIMARY KEY(`fleet`, `model`)
);
--> statement-breakpoint
DROP TABLE `placements`;