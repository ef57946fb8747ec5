CREATE TABLE "issue_end_users" (
	"project_id" uuid NOT NULL,
	"issue_id" uuid NOT NULL,
	"end_user_id" text NOT NULL,
	"first_seen_at" timestamp with time zone NOT NULL,
	CONSTRAINT "issue_end_users_project_id_issue_id_end_user_id_pk" PRIMARY KEY("project_id","issue_id","end_user_id")
);
--> statement-breakpoint
CREATE INDEX "error_events_session_idx" ON "error_events" USING btree ("project_id","session_id","timestamp");