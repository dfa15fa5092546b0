CREATE TABLE `placements` (
	`model` text PRIMARY KEY NOT NULL,
	`replicas` integer,
	`pinned` text,
	`updated_at` integer NOT NULL,
	`updated_by` text NOT NULL
);
