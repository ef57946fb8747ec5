import { sql } from 'drizzle-orm'
import type { TestCore } from '../../helpers/core'

/*
 * A full, valid body for every ingestion route of WIRE.md, and how to find what it stored: the
 * starting point that adversarial-bodies.test.ts makes hostile one position at a time.
 */

const TS = 1_700_000_000_000
export const MAP = { version: 3, file: 'app.js', sources: ['app.ts'], names: [], mappings: 'AAAA', sourcesContent: ['let a = 1'] }

export interface Route {
  path: string
  /** A valid body with every field the route reads, unique to `n`. */
  body(n: number): Record<string, unknown>
  /** Pointers (into body) of free-form objects. */
  freeForm: string[]
  /** Whether the request of `n` was stored. */
  stored(core: TestCore, n: number): Promise<boolean>
}

const has = async (core: TestCore, query: ReturnType<typeof sql>) => (await core.database.db.rows(query)).length > 0
const sid = (route: string, n: number) => `fz-${route}-${n}`

export const ROUTES: Route[] = [
  {
    path: '/init',
    body: (n) => ({ sessionId: sid('init', n), endUserId: `fz-u-init-${n}`, entryURL: 'https://shop.test/a?b=c', referrer: 'https://ref.test/', sdkVersion: '1.2.3' }),
    freeForm: [],
    stored: (core, n) => has(core, sql`select 1 from sessions where session_id = ${sid('init', n)}`),
  },
  {
    path: '/events',
    body: (n) => ({
      sessionId: sid('events', n),
      endUserId: `fz-u-ev-${n}`,
      windowId: 'w1',
      seq: 1,
      sdkVersion: '1.0.0',
      automaticProperties: { browser: 'Chrome', os: 'Mac', screen: '1x1', referrer: 'https://r.test/', nested: { a: 1 } },
      events: [
        { type: 4, timestamp: TS + n, data: { href: 'https://shop.test/', width: 1, height: 1 } },
        { type: 3, timestamp: TS + n + 1, data: { source: 1, text: 'x' } },
        { type: 5, timestamp: TS + n + 2, data: { tag: 't', payload: { k: 'v' } } },
      ],
    }),
    freeForm: ['/automaticProperties', '/events/0/data', '/events/2/data/payload'],
    stored: (core, n) => has(core, sql`select 1 from replay_chunks where session_id = ${sid('events', n)}`),
  },
  {
    path: '/user',
    body: (n) => ({ userId: `fz-u-user-${n}`, userAttributes: { email: `a${n}@shop.test`, name: 'N', plan: { tier: 'pro' } }, sessionId: sid('user', n), posthogName: 'p' }),
    freeForm: ['/userAttributes', '/userAttributes/plan'],
    stored: (core, n) => has(core, sql`select 1 from sessions where session_id = ${sid('user', n)} and end_user_id is not null`),
  },
  {
    path: '/user/auth',
    body: (n) => ({ userId: `fz-u-auth-${n}`, userAttributes: { email: `b${n}@shop.test`, id: `id${n}`, meta: { a: 1 } }, sessionId: sid('auth', n), authFields: ['email', 'id'] }),
    freeForm: ['/userAttributes', '/userAttributes/meta'],
    stored: (core, n) => has(core, sql`select 1 from sessions where session_id = ${sid('auth', n)} and end_user_id is not null`),
  },
  {
    path: '/customEvent',
    body: (n) => ({ sessionId: sid('ce', n), eventName: 'clicked', eventProperties: { a: 'b', n: 1, o: { p: [1, 'x'] } }, endUserId: `fz-u-ce-${n}`, timestamp: TS, uuid: crypto.randomUUID() }),
    freeForm: ['/eventProperties', '/eventProperties/o'],
    stored: (core, n) => has(core, sql`select 1 from events where session_id = ${sid('ce', n)}`),
  },
  {
    path: '/customEvent/batch',
    body: (n) => ({ sessionId: sid('ceb', n), endUserId: `fz-u-ceb-${n}`, events: [{ eventName: 'a', eventProperties: { x: 1, o: { y: 'z' } }, timestamp: TS, uuid: `u-${n}` }] }),
    freeForm: ['/events/0/eventProperties', '/events/0/eventProperties/o'],
    stored: (core, n) => has(core, sql`select 1 from events where session_id = ${sid('ceb', n)}`),
  },
  {
    path: '/groupidentify',
    body: (n) => ({ sessionId: sid('grp', n), endUserId: `fz-u-grp-${n}`, groupType: 'company', groupKey: `acme-${n}`, groupProperties: { name: 'Acme', size: 10, o: { a: 1 } } }),
    freeForm: ['/groupProperties', '/groupProperties/o'],
    stored: (core, n) => has(core, sql`select 1 from group_members m join end_users u using (project_id, end_user_id) where m.end_user_id = ${`fz-u-grp-${n}`}`),
  },
  {
    path: '/ip-info',
    body: (n) => ({ sessionId: sid('ip', n), endUserId: `fz-u-ip-${n}`, ip: '8.8.8.8' }),
    freeForm: [],
    stored: (core, n) => has(core, sql`select 1 from sessions where session_id = ${sid('ip', n)}`),
  },
  {
    path: '/logs',
    body: (n) => ({
      sessionId: sid('logs', n),
      endUserId: `fz-u-logs-${n}`,
      logs: [{ level: 'warn', message: `m${n}`, stack: 'Error: x\n    at f (https://shop.test/app.js:1:2)', url: 'https://shop.test/', timestampMs: TS, sessionId: sid('logs', n), endUserId: `fz-u-logs-${n}`, userAgent: 'Mozilla/5.0' }],
    }),
    freeForm: [],
    stored: (core, n) => has(core, sql`select 1 from logs where session_id = ${sid('logs', n)}`),
  },
  {
    path: '/network',
    body: (n) => ({
      requestId: `r${n}`,
      url: 'https://api.test/x',
      method: 'GET',
      status: 500,
      statusText: 'Server Error',
      duration: 12.5,
      timestampMs: TS,
      sessionId: sid('net', n),
      endUserId: `fz-u-net-${n}`,
      errorType: 'http',
      errorMessage: 'boom',
      errorName: 'HttpError',
      startTimeMs: TS - 10,
      spanName: 'GET /x',
      spanStatus: 'error',
      attributes: { a: 'b', o: { c: 1 } },
    }),
    freeForm: ['/attributes', '/attributes/o'],
    stored: (core, n) => has(core, sql`select 1 from network_errors where session_id = ${sid('net', n)}`),
  },
  {
    path: '/spans/batch',
    body: (n) => ({
      sessionId: sid('span', n),
      endUserId: `fz-u-span-${n}`,
      spans: [
        {
          traceId: n.toString(16).padStart(32, 'a'),
          spanId: n.toString(16).padStart(16, 'b'),
          parentSpanId: 'c'.repeat(16),
          name: 'GET /',
          kind: 'client',
          startTimeMs: TS,
          endTimeMs: TS + 5,
          status: { code: 'error', message: 'bad' },
          attributes: { 'http.method': 'GET', o: { a: 1 } },
          events: [{ name: 'ev', timeMs: TS + 1, attributes: { k: 'v' } }],
        },
      ],
    }),
    freeForm: ['/spans/0/attributes', '/spans/0/attributes/o', '/spans/0/events/0/attributes'],
    stored: (core, n) => has(core, sql`select 1 from spans where session_id = ${sid('span', n)}`),
  },
  {
    path: '/errors',
    body: (n) => ({
      sessionId: sid('err', n),
      endUserId: `fz-u-err-${n}`,
      errors: [
        {
          name: 'TypeError',
          message: `x is undefined ${n}`,
          stack: 'TypeError: x\n    at f (https://shop.test/app.js:1:2)\n    at g (https://shop.test/app.js:3:4)',
          frames: [{ filename: 'https://shop.test/app.js', function: 'f', lineno: 1, colno: 2 }],
          url: 'https://shop.test/',
          timestampMs: TS,
          release: 'fz@1',
          level: 'error',
          handled: false,
          fingerprint: ['{{ default }}', 'x'],
          context: { a: 1, o: { b: 'c' } },
        },
      ],
    }),
    freeForm: ['/errors/0/context', '/errors/0/context/o'],
    stored: (core, n) => has(core, sql`select 1 from error_events where session_id = ${sid('err', n)}`),
  },
  {
    path: '/sourcemaps',
    body: (n) => ({ release: `fz@${n}`, files: [{ name: 'app.js.map', url: 'https://shop.test/app.js.map', content: structuredClone(MAP) }] }),
    freeForm: ['/files/0/content'],
    stored: (core, n) => has(core, sql`select 1 from sourcemaps where release = ${`fz@${n}`}`),
  },
  {
    path: '/heartbeat',
    body: (n) => ({ sessionId: sid('hb', n), endUserId: `fz-u-hb-${n}`, windowId: 'w1', url: 'https://shop.test/' }),
    freeForm: [],
    stored: (core, n) => has(core, sql`select 1 from sessions where session_id = ${sid('hb', n)}`),
  },
  {
    path: '/session-end',
    body: (n) => ({ sessionId: sid('end', n), endUserId: `fz-u-end-${n}`, windowId: 'w1' }),
    freeForm: [],
    stored: (core, n) => has(core, sql`select 1 from sessions where session_id = ${sid('end', n)}`),
  },
]
