-- Auth-aware identify compares auth values as people mean them: an email address typed with
-- capitals or a space around it (`Ana@Example.com `) is the same as `ana@example.com`. A text that,
-- without the whitespace around it, is `local@domain` (one `@`, something on both sides, no
-- whitespace) is compared trimmed and in lowercase, whatever its field is called; any other value is
-- compared as it is (`"A1"` is not `"a1"`, `1` is not `"1"`). Stored attributes keep the spelling
-- sent; only this function folds them, for the index below and for the comparison in
-- core/src/ingest/identity/store.ts, so both sides are folded alike. One function with built-ins
-- only: an index's function is run with a search_path of pg_catalog alone during maintenance.
CREATE FUNCTION sightline_auth_values(attributes jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT coalesce(jsonb_object_agg(f.key, CASE
      WHEN jsonb_typeof(f.value) = 'string' AND t.trimmed ~ '^[^[:space:]@]+@[^[:space:]@]+$' THEN to_jsonb(lower(t.trimmed))
      ELSE f.value END), '{}'::jsonb)
  FROM jsonb_each(CASE WHEN jsonb_typeof(attributes) = 'object' THEN attributes ELSE '{}'::jsonb END) f,
    LATERAL (SELECT regexp_replace(f.value #>> '{}', '^[[:space:]]+|[[:space:]]+$', '', 'g') AS trimmed) t
$$;--> statement-breakpoint
DROP INDEX "end_users_attributes_idx";--> statement-breakpoint
CREATE INDEX "end_users_auth_values_idx" ON "end_users" USING gin (sightline_auth_values("attributes") jsonb_path_ops);
