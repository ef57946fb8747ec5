import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { errorText } from '@sightline/core/db'
import { createLogger } from '@sightline/core/log'
import { readOrUnavailable } from '@sightline/core/ingest/shared/write'
import { createTestDatabase, type TestDatabase } from '../helpers/database'

// What an operator reads when the database refuses a statement: its reason, on one bounded line.
let database: TestDatabase
beforeAll(async () => {
  database = await createTestDatabase()
})
afterAll(() => database.close())

const failedQuery = () => database.db.rows(sql`select no_such_column from (select ${'x'.repeat(100_000)}::text as t) as q`).catch((error: unknown) => error)

describe('errors of the database, logged', () => {
  test("errorText gives the database's reason, not the failed query with its parameters, within a log line", async () => {
    const error = await failedQuery()
    expect(String((error as Error).message)).toStartWith('Failed query') // what the driver wrapper says
    const text = errorText(error)
    expect(text).toMatch(/column "no_such_column" does not exist/)
    expect(text).not.toContain('xxxxxxxxxx')
    expect(text.length).toBeLessThanOrEqual(300)
  })

  test('a read that fails answers 503 with Retry-After and logs the reason', async () => {
    const lines: string[] = []
    const refused = await readOrUnavailable(failedQuery().then((e) => Promise.reject(e)), createLogger('error', (line) => lines.push(line))).catch((e) => e)
    expect(refused).toMatchObject({ code: 'storage_unavailable', status: 503, details: { retryAfterSeconds: 2 } })
    expect(lines).toHaveLength(1)
    const entry = JSON.parse(lines[0])
    expect(entry.error).toMatch(/column "no_such_column" does not exist/)
    expect(lines[0]).not.toContain('xxxxxxxxxx')
  })
})
