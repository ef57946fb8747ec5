-- Issues' users stored by a core older than 0007, whose devices were made aliases afterwards, are
-- still keyed by the device: such an Issue counts its person twice (device and person rows), or
-- keeps a row the next alias move does not reach. Each such row goes to its person, once, as
-- issuePeopleSink (core/src/ingest/errors/people.ts) moves them now: where the person has a row for
-- the Issue already, the device's row is deleted (the person keeps the earliest first seen) and the
-- Issue counts one affected user less; else it is re-keyed and the count stays. Several devices of
-- one person on an Issue become one row. Counts are lowered by what was removed rather than set to
-- the rows' count: Issues stored before issue_end_users (0001) counted users no row holds.
-- Core never chains aliases (an alias's person is no alias); should a database hold a chain, its
-- rows are left as they are, so that no row is both deleted and updated by this one statement.
-- Set-based, one statement: each alias finds its device's rows by the index of 0007; on a database
-- with nothing to move, nothing is written.
with moved as (
  delete from issue_end_users d
  using end_user_aliases a
  where a.project_id = d.project_id and a.alias_id = d.end_user_id
    and not exists (select 1 from end_user_aliases c where c.project_id = a.project_id and c.alias_id = a.end_user_id)
  returning d.project_id, d.issue_id, a.end_user_id as person, d.first_seen_at
), people as (
  select m.project_id, m.issue_id, m.person, min(m.first_seen_at) as first_seen_at, count(*) as device_rows,
    exists (select 1 from issue_end_users p where p.project_id = m.project_id and p.issue_id = m.issue_id and p.end_user_id = m.person) as had_row
  from moved m
  group by m.project_id, m.issue_id, m.person
), kept as (
  insert into issue_end_users (project_id, issue_id, end_user_id, first_seen_at)
  select project_id, issue_id, person, first_seen_at from people
  on conflict (project_id, issue_id, end_user_id) do update set first_seen_at = least(issue_end_users.first_seen_at, excluded.first_seen_at)
), removed as (
  select project_id, issue_id, sum(device_rows - case when had_row then 0 else 1 end) as n
  from people
  group by project_id, issue_id
)
update issues i set affected_users = greatest(i.affected_users - r.n, 0)
from removed r
where i.project_id = r.project_id and i.issue_id = r.issue_id and r.n > 0;
