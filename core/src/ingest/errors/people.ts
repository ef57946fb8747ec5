import { sql } from 'drizzle-orm'
import type { Sink } from '../../sink'

/** An end user (`from`) that a commit made an alias: what it counted among Issues' users is `to`'s now. */
export interface AliasMove {
  projectId: string
  from: string
  to: string
}

/**
 * Moves the Issue users of end users made aliases (handed by the identity sink) to their person:
 * a row the person already has is deleted and its Issue counts one affected user less; another is
 * re-keyed to the person (the count stays). Reports sent once the alias is made count the person
 * already (see errorEventsSink); this moves those sent before.
 *
 * A sink of its own, after error_events, rather than in the identity sink: every commit then locks
 * Issues after end users, in the error sink's order first. Its rows are of projects whose identity
 * lock the commit holds exclusively (an auth-aware identify), and every commit that writes Issue users
 * of a project holds it at least shared (see readsAliases): no other commit writes these rows while it
 * runs, so the moves, one statement each, in the order they were made (a device made an alias of a
 * person who then comes whole to another moves twice, as it would in two commits), wait on no one.
 */
export const issuePeopleSink: Sink<AliasMove> = {
  name: 'issue_people',
  async write(tx, moves) {
    await Promise.all(moves.filter((m) => m.from !== m.to).map((move) => tx.execute(moveIssueUsers(move))))
  },
}

function moveIssueUsers({ projectId, from, to }: AliasMove) {
  return sql`
    with moved as (
      delete from issue_end_users where project_id = ${projectId} and end_user_id = ${from}
      returning issue_id, first_seen_at
    ), met as (
      update issue_end_users p set first_seen_at = least(p.first_seen_at, m.first_seen_at)
      from moved m where p.project_id = ${projectId} and p.issue_id = m.issue_id and p.end_user_id = ${to}
      returning p.issue_id
    ), rekeyed as (
      insert into issue_end_users (project_id, issue_id, end_user_id, first_seen_at)
      select ${projectId}::uuid, m.issue_id, ${to}, m.first_seen_at from moved m
      where m.issue_id not in (select issue_id from met)
    )
    update issues i set affected_users = i.affected_users - 1
    from met where i.project_id = ${projectId} and i.issue_id = met.issue_id`
}
