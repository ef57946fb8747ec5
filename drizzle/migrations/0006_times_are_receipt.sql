ALTER TABLE "sessions" ADD COLUMN "times_are_receipt" boolean;--> statement-breakpoint
ALTER TABLE "end_users" ADD COLUMN "times_are_receipt" boolean;