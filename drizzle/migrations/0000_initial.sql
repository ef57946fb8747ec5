CREATE TABLE "projects" (
	"project_id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"name" text NOT NULL,
	"monthly_limit" bigint,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "environments" (
	"project_id" uuid NOT NULL,
	"name" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "environments_project_id_name_pk" PRIMARY KEY("project_id","name")
);
--> statement-breakpoint
CREATE TABLE "api_keys" (
	"project_id" uuid NOT NULL,
	"key_id" uuid DEFAULT gen_random_uuid() NOT NULL,
	"environment" text NOT NULL,
	"key_hash" text NOT NULL,
	"key_prefix" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"revoked_at" timestamp with time zone,
	CONSTRAINT "api_keys_project_id_key_id_pk" PRIMARY KEY("project_id","key_id")
);
--> statement-breakpoint
CREATE TABLE "dashboard_users" (
	"project_id" uuid NOT NULL,
	"user_id" uuid DEFAULT gen_random_uuid() NOT NULL,
	"email" text NOT NULL,
	"password_hash" text NOT NULL,
	"role" text DEFAULT 'member' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "dashboard_users_project_id_user_id_pk" PRIMARY KEY("project_id","user_id")
);
--> statement-breakpoint
CREATE TABLE "dashboard_sessions" (
	"project_id" uuid NOT NULL,
	"token_hash" text NOT NULL,
	"user_id" uuid NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	CONSTRAINT "dashboard_sessions_project_id_token_hash_pk" PRIMARY KEY("project_id","token_hash")
);
--> statement-breakpoint
CREATE TABLE "sessions" (
	"project_id" uuid NOT NULL,
	"session_id" text NOT NULL,
	"environment" text NOT NULL,
	"end_user_id" text,
	"started_at" timestamp with time zone NOT NULL,
	"last_activity_at" timestamp with time zone NOT NULL,
	"ended_at" timestamp with time zone,
	"entry_url" text,
	"referrer" text,
	"user_agent" text,
	"browser" text,
	"browser_version" text,
	"os" text,
	"os_version" text,
	"device_type" text,
	"device_vendor" text,
	"device_model" text,
	"automatic_properties" jsonb,
	"window_ids" text[] DEFAULT '{}' NOT NULL,
	"geo" jsonb,
	"sdk_version" text,
	"live_viewer_until" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "sessions_project_id_session_id_pk" PRIMARY KEY("project_id","session_id")
);
--> statement-breakpoint
CREATE TABLE "end_users" (
	"project_id" uuid NOT NULL,
	"end_user_id" text NOT NULL,
	"attributes" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"geo" jsonb,
	"first_seen_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_seen_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "end_users_project_id_end_user_id_pk" PRIMARY KEY("project_id","end_user_id")
);
--> statement-breakpoint
CREATE TABLE "end_user_aliases" (
	"project_id" uuid NOT NULL,
	"alias_id" text NOT NULL,
	"end_user_id" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "end_user_aliases_project_id_alias_id_pk" PRIMARY KEY("project_id","alias_id")
);
--> statement-breakpoint
CREATE TABLE "replay_chunks" (
	"project_id" uuid NOT NULL,
	"session_id" text NOT NULL,
	"window_id" text DEFAULT '' NOT NULL,
	"content_hash" text NOT NULL,
	"seq" integer,
	"first_timestamp" timestamp with time zone NOT NULL,
	"last_timestamp" timestamp with time zone NOT NULL,
	"event_count" integer NOT NULL,
	"has_full_snapshot" boolean NOT NULL,
	"raw_bytes" integer NOT NULL,
	"data" "bytea" NOT NULL,
	"received_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "replay_chunks_project_id_session_id_window_id_content_hash_pk" PRIMARY KEY("project_id","session_id","window_id","content_hash")
);
--> statement-breakpoint
CREATE TABLE "events" (
	"project_id" uuid NOT NULL,
	"uuid" uuid NOT NULL,
	"environment" text NOT NULL,
	"session_id" text NOT NULL,
	"end_user_id" text,
	"event_name" text NOT NULL,
	"properties" jsonb,
	"timestamp" timestamp with time zone NOT NULL,
	"received_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "events_project_id_uuid_pk" PRIMARY KEY("project_id","uuid")
);
--> statement-breakpoint
CREATE TABLE "groups" (
	"project_id" uuid NOT NULL,
	"group_type" text NOT NULL,
	"group_key" text NOT NULL,
	"properties" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "groups_project_id_group_type_group_key_pk" PRIMARY KEY("project_id","group_type","group_key")
);
--> statement-breakpoint
CREATE TABLE "group_members" (
	"project_id" uuid NOT NULL,
	"group_type" text NOT NULL,
	"group_key" text NOT NULL,
	"end_user_id" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "group_members_project_id_group_type_group_key_end_user_id_pk" PRIMARY KEY("project_id","group_type","group_key","end_user_id")
);
--> statement-breakpoint
CREATE TABLE "logs" (
	"project_id" uuid NOT NULL,
	"content_hash" text NOT NULL,
	"session_id" text NOT NULL,
	"end_user_id" text,
	"level" text NOT NULL,
	"message" text NOT NULL,
	"stack" text,
	"url" text,
	"user_agent" text,
	"timestamp" timestamp with time zone NOT NULL,
	"received_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "logs_project_id_content_hash_pk" PRIMARY KEY("project_id","content_hash")
);
--> statement-breakpoint
CREATE TABLE "network_errors" (
	"project_id" uuid NOT NULL,
	"session_id" text NOT NULL,
	"request_id" text NOT NULL,
	"end_user_id" text,
	"url" text NOT NULL,
	"method" text NOT NULL,
	"status" integer,
	"status_text" text,
	"duration_ms" double precision,
	"error_type" text,
	"error_message" text,
	"error_name" text,
	"span_name" text,
	"span_status" text,
	"attributes" jsonb,
	"start_time" timestamp with time zone,
	"timestamp" timestamp with time zone NOT NULL,
	"received_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "network_errors_project_id_session_id_request_id_pk" PRIMARY KEY("project_id","session_id","request_id")
);
--> statement-breakpoint
CREATE TABLE "spans" (
	"project_id" uuid NOT NULL,
	"trace_id" text NOT NULL,
	"span_id" text NOT NULL,
	"parent_span_id" text,
	"session_id" text,
	"end_user_id" text,
	"name" text NOT NULL,
	"kind" text DEFAULT 'internal' NOT NULL,
	"start_time" timestamp with time zone NOT NULL,
	"end_time" timestamp with time zone NOT NULL,
	"duration_ms" double precision NOT NULL,
	"status_code" text DEFAULT 'unset' NOT NULL,
	"status_message" text,
	"attributes" jsonb,
	"events" jsonb,
	"received_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "spans_project_id_trace_id_span_id_pk" PRIMARY KEY("project_id","trace_id","span_id")
);
--> statement-breakpoint
CREATE TABLE "issues" (
	"project_id" uuid NOT NULL,
	"issue_id" uuid DEFAULT gen_random_uuid() NOT NULL,
	"fingerprint" text NOT NULL,
	"title" text NOT NULL,
	"culprit" text,
	"level" text DEFAULT 'error' NOT NULL,
	"status" text DEFAULT 'open' NOT NULL,
	"is_regression" boolean DEFAULT false NOT NULL,
	"first_seen_at" timestamp with time zone NOT NULL,
	"last_seen_at" timestamp with time zone NOT NULL,
	"occurrences" bigint DEFAULT 0 NOT NULL,
	"affected_users" bigint DEFAULT 0 NOT NULL,
	"first_release" text,
	"last_release" text,
	"resolved_at" timestamp with time zone,
	CONSTRAINT "issues_project_id_issue_id_pk" PRIMARY KEY("project_id","issue_id")
);
--> statement-breakpoint
CREATE TABLE "error_events" (
	"project_id" uuid NOT NULL,
	"content_hash" text NOT NULL,
	"issue_id" uuid NOT NULL,
	"session_id" text NOT NULL,
	"end_user_id" text,
	"name" text NOT NULL,
	"message" text NOT NULL,
	"stack" text,
	"frames" jsonb,
	"url" text,
	"level" text DEFAULT 'error' NOT NULL,
	"handled" boolean,
	"release" text,
	"context" jsonb,
	"timestamp" timestamp with time zone NOT NULL,
	"received_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "error_events_project_id_content_hash_pk" PRIMARY KEY("project_id","content_hash")
);
--> statement-breakpoint
CREATE TABLE "sourcemaps" (
	"project_id" uuid NOT NULL,
	"release" text NOT NULL,
	"name" text NOT NULL,
	"url" text,
	"debug_id" text,
	"content" "bytea" NOT NULL,
	"size_bytes" integer NOT NULL,
	"uploaded_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "sourcemaps_project_id_release_name_pk" PRIMARY KEY("project_id","release","name")
);
--> statement-breakpoint
CREATE TABLE "presence" (
	"project_id" uuid NOT NULL,
	"session_id" text NOT NULL,
	"window_id" text DEFAULT '' NOT NULL,
	"end_user_id" text,
	"url" text,
	"last_seen_at" timestamp with time zone NOT NULL,
	CONSTRAINT "presence_project_id_session_id_window_id_pk" PRIMARY KEY("project_id","session_id","window_id")
);
--> statement-breakpoint
CREATE TABLE "usage_counters" (
	"project_id" uuid NOT NULL,
	"month" date NOT NULL,
	"events" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "usage_counters_project_id_month_pk" PRIMARY KEY("project_id","month")
);
--> statement-breakpoint
CREATE TABLE "scan_findings" (
	"project_id" uuid NOT NULL,
	"fingerprint" text NOT NULL,
	"source" text,
	"rule_id" text NOT NULL,
	"severity" text NOT NULL,
	"file" text NOT NULL,
	"line" integer,
	"message" text NOT NULL,
	"first_seen_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_seen_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "scan_findings_project_id_fingerprint_pk" PRIMARY KEY("project_id","fingerprint")
);
--> statement-breakpoint
ALTER TABLE "environments" ADD CONSTRAINT "environments_project_id_projects_project_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("project_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_project_id_environment_environments_project_id_name_fk" FOREIGN KEY ("project_id","environment") REFERENCES "public"."environments"("project_id","name") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "api_keys_key_hash_idx" ON "api_keys" USING btree ("key_hash");--> statement-breakpoint
CREATE INDEX "api_keys_environment_idx" ON "api_keys" USING btree ("project_id","environment");--> statement-breakpoint
CREATE UNIQUE INDEX "dashboard_users_email_idx" ON "dashboard_users" USING btree ("project_id","email");--> statement-breakpoint
CREATE UNIQUE INDEX "dashboard_sessions_token_idx" ON "dashboard_sessions" USING btree ("token_hash");--> statement-breakpoint
CREATE INDEX "sessions_started_idx" ON "sessions" USING btree ("project_id","started_at");--> statement-breakpoint
CREATE INDEX "end_user_aliases_canonical_idx" ON "end_user_aliases" USING btree ("project_id","end_user_id");--> statement-breakpoint
CREATE INDEX "replay_chunks_timeline_idx" ON "replay_chunks" USING btree ("project_id","session_id","first_timestamp");--> statement-breakpoint
CREATE INDEX "events_name_time_idx" ON "events" USING btree ("project_id","event_name","timestamp");--> statement-breakpoint
CREATE INDEX "group_members_user_idx" ON "group_members" USING btree ("project_id","end_user_id");--> statement-breakpoint
CREATE INDEX "logs_session_idx" ON "logs" USING btree ("project_id","session_id","timestamp");--> statement-breakpoint
CREATE INDEX "network_errors_time_idx" ON "network_errors" USING btree ("project_id","timestamp");--> statement-breakpoint
CREATE INDEX "spans_session_idx" ON "spans" USING btree ("project_id","session_id");--> statement-breakpoint
CREATE UNIQUE INDEX "issues_fingerprint_idx" ON "issues" USING btree ("project_id","fingerprint");--> statement-breakpoint
CREATE INDEX "error_events_issue_idx" ON "error_events" USING btree ("project_id","issue_id","timestamp");--> statement-breakpoint
CREATE INDEX "sourcemaps_debug_id_idx" ON "sourcemaps" USING btree ("project_id","debug_id");--> statement-breakpoint
CREATE INDEX "presence_last_seen_idx" ON "presence" USING btree ("project_id","last_seen_at");