import { createHash } from 'node:crypto'
import { sql } from 'drizzle-orm'
import type { TestCore } from '../helpers/core'

/**
 * Every public endpoint as the tracker calls it, with a body and where its rows land. One line per
 * endpoint: a test drives each through the relay and finds what it stored. Endpoints core does not
 * serve (yet) are skipped by the tests, by name, not silently passed.
 */
export interface Endpoint {
  method: 'GET' | 'POST'
  path: string
  /** A valid body for a fresh id. */
  body?: (id: string) => unknown
  /** Rows the request stored, found by that id; omitted for endpoints that store nothing (health). */
  stored?: (core: TestCore, id: string) => Promise<number>
}

const count = async (core: TestCore, query: ReturnType<typeof sql>) => Number((await core.database.db.rows<{ n: string }>(query))[0].n)
const now = () => Date.now() - 1000
/** Distinct ids per test id: spans are stored once per (trace, span). */
const hex = (seed: string, length: number) => createHash('sha256').update(seed).digest('hex').slice(0, length)

export const ENDPOINTS: Endpoint[] = [
  { method: 'GET', path: '/health' },
  { method: 'GET', path: '/health/simple' },
  {
    method: 'POST',
    path: '/api/ingestion/customEvent',
    body: (id) => ({ sessionId: id, endUserId: `${id}-u`, eventName: 'relayed', eventProperties: { via: 'relay' } }),
    stored: (core, id) => count(core, sql`select count(*) as n from events where session_id = ${id}`),
  },
  {
    method: 'POST',
    path: '/api/ingestion/customEvent/batch',
    body: (id) => ({ sessionId: id, endUserId: `${id}-u`, events: [{ eventName: 'a' }, { eventName: 'b' }] }),
    stored: (core, id) => count(core, sql`select count(*) as n from events where session_id = ${id}`),
  },
  {
    method: 'POST',
    path: '/api/ingestion/init',
    body: (id) => ({ sessionId: id, endUserId: `${id}-u`, entryURL: 'https://shop.test/' }),
    stored: (core, id) => count(core, sql`select count(*) as n from sessions where session_id = ${id}`),
  },
  {
    method: 'POST',
    path: '/api/ingestion/events',
    body: (id) => ({ sessionId: id, endUserId: `${id}-u`, windowId: 'w1', events: [{ type: 4, timestamp: now(), data: { href: 'https://shop.test/' } }] }),
    stored: (core, id) => count(core, sql`select count(*) as n from replay_chunks where session_id = ${id}`),
  },
  {
    method: 'POST',
    path: '/api/ingestion/user',
    body: (id) => ({ userId: `${id}-u`, userAttributes: { email: `${id}@shop.test` }, sessionId: id }),
    stored: (core, id) => count(core, sql`select count(*) as n from end_users where end_user_id = ${`${id}-u`}`),
  },
  {
    method: 'POST',
    path: '/api/ingestion/user/auth',
    body: (id) => ({ userId: `${id}-u`, userAttributes: { email: `${id}@shop.test` }, sessionId: id, authFields: ['email'] }),
    stored: (core, id) => count(core, sql`select count(*) as n from end_users where end_user_id = ${`${id}-u`}`),
  },
  {
    method: 'POST',
    path: '/api/ingestion/groupidentify',
    body: (id) => ({ sessionId: id, endUserId: `${id}-u`, groupType: 'company', groupKey: id }),
    stored: (core, id) => count(core, sql`select count(*) as n from groups where group_key = ${id}`),
  },
  {
    method: 'POST',
    path: '/api/ingestion/ip-info',
    body: (id) => ({ sessionId: id, endUserId: `${id}-u` }),
    stored: (core, id) => count(core, sql`select count(*) as n from sessions where session_id = ${id}`),
  },
  {
    method: 'POST',
    path: '/api/ingestion/logs',
    body: (id) => ({ level: 'warn', message: 'relayed', url: 'https://shop.test/', timestampMs: now(), sessionId: id, endUserId: `${id}-u` }),
    stored: (core, id) => count(core, sql`select count(*) as n from logs where session_id = ${id}`),
  },
  {
    method: 'POST',
    path: '/api/ingestion/network',
    body: (id) => ({
      requestId: `${id}-r`,
      url: 'https://api.shop.test/cart',
      method: 'GET',
      status: 500,
      statusText: 'Internal Server Error',
      duration: 12,
      timestampMs: now(),
      sessionId: id,
      endUserId: `${id}-u`,
      errorType: 'http',
      errorMessage: null,
    }),
    stored: (core, id) => count(core, sql`select count(*) as n from network_errors where session_id = ${id}`),
  },
  {
    method: 'POST',
    path: '/api/ingestion/spans/batch',
    body: (id) => ({ sessionId: id, spans: [{ traceId: hex(id, 32), spanId: hex(`${id}-span`, 16), name: 'GET /cart', startTimeMs: now() - 5, endTimeMs: now() }] }),
    stored: (core, id) => count(core, sql`select count(*) as n from spans where session_id = ${id}`),
  },
  {
    method: 'POST',
    path: '/api/ingestion/errors',
    body: (id) => ({ sessionId: id, name: 'TypeError', message: 'x is undefined', stack: 'TypeError: x is undefined\n    at f (https://shop.test/app.js:1:2)', timestampMs: now() }),
    stored: (core, id) => count(core, sql`select count(*) as n from error_events where session_id = ${id}`),
  },
  {
    method: 'POST',
    path: '/api/ingestion/sourcemaps',
    body: (id) => ({ release: id, files: [{ name: 'app.js.map', content: { version: 3, sources: ['app.ts'], names: [], mappings: 'AAAA' } }] }),
    stored: (core, id) => count(core, sql`select count(*) as n from sourcemaps where release = ${id}`),
  },
  {
    method: 'POST',
    path: '/api/ingestion/heartbeat',
    body: (id) => ({ sessionId: id, windowId: 'w1', url: 'https://shop.test/' }),
    stored: (core, id) => count(core, sql`select count(*) as n from presence where session_id = ${id}`),
  },
  {
    method: 'POST',
    path: '/api/ingestion/session-end',
    body: (id) => ({ sessionId: id, windowId: 'w1' }),
    stored: (core, id) => count(core, sql`select count(*) as n from sessions where session_id = ${id} and ended_at is not null`),
  },
]

/** Whether the core under test serves this method and path (others are being built). */
export const serves = (core: TestCore, endpoint: Endpoint) => core.app.routes.some((route) => route.path === endpoint.path && route.method === endpoint.method)
