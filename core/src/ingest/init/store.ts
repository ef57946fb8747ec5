import { sql } from 'drizzle-orm'
import type { Database } from '../../db'

/** The end user a session is bound to, if the session exists and has one. */
export async function sessionEndUser(db: Database, projectId: string, sessionId: string): Promise<string | null> {
  const [row] = await db.rows<{ end_user_id: string | null }>(
    sql`select end_user_id from sessions where project_id = ${projectId} and session_id = ${sessionId}`,
  )
  return row?.end_user_id ?? null
}
