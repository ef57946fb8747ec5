ALTER TABLE "usage_counters" ADD COLUMN "shard" smallint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "usage_counters" DROP CONSTRAINT "usage_counters_project_id_month_pk";--> statement-breakpoint
ALTER TABLE "usage_counters" ADD CONSTRAINT "usage_counters_project_id_month_shard_pk" PRIMARY KEY("project_id","month","shard");
