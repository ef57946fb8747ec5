import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { memoryLogger, startCore, type TestCore } from '../../helpers/core'
import { MAP, ROUTES, type Route } from './ingestion-routes'

// Property-style: every ingestion route of WIRE.md gets a full, valid body, and then that body with
// one position at a time made hostile (every string, every number, keys of every object, deep nesting
// in every free-form object), each sent at once with well-formed requests of other routes, so that the
// writer commits them together. Whatever the hostile value, its answer is 200 and stored, or a 4xx in
// WIRE.md's shape without an internal message; its neighbours are 200 and stored; nothing is logged as
// a fault of the service.


/** A JSON fragment to put as it is in a body's text (what JSON.stringify cannot write: 1e400, escapes, duplicate keys). */
const raw = (json: string) => `@@raw:${json}@@`
const RAW = /"@@raw:((?:[^@]|@(?!@))*)@@"/g
/** A body's text, its raw fragments put in place. */
const bodyText = (body: unknown) => JSON.stringify(body).replace(RAW, (_, json: string) => JSON.parse(`"${json}"`))

/** Long texts just under and over each limit README and WIRE.md document (ids, names, URLs, session texts, messages, stacks). */
const LIMITS = [128, 256, 1024, 2048, 8192, 32 * 1024, 64 * 1024]
const HOSTILE_STRINGS: string[] = [
  raw('"a\\u0000b"'),
  raw('"\\u0000"'),
  raw('"\\ud800"'),
  raw('"\\udfff"'),
  raw('"x\\udbff\\u0000"'),
  '\\u0000',
  '\uffff\ufffe',
  '',
  'NaN',
  '-Infinity',
  '1e400',
  '__proto__',
  ...LIMITS.flatMap((limit) => ['a'.repeat(limit - 1) + '😀', 'é'.repeat(limit + 1), 'a'.repeat(limit)]),
]
const HOSTILE_NUMBERS: string[] = ['1e400', '-1e400', '-0', '1e-400', '9223372036854775808', '-9223372036854775809', '9007199254740993', '1.5', '-1', '"NaN"', '"Infinity"', '"1e400"', 'null', '{}']
const HOSTILE_KEYS: string[] = ['__proto__', 'constructor', 'prototype', 'toString', 'k'.repeat(10_000), '\u0000', 'a\u0000b', '\ud800', '\udfff', '\\u0000', '\uffff', '']
const nested = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`
const NESTINGS = [nested(500), nested(511), nested(5000), `${'['.repeat(5000)}${']'.repeat(5000)}`]

/** Every leaf of a JSON value with its pointer. */
function leaves(value: unknown, at = ''): { at: string; value: unknown }[] {
  if (value !== null && typeof value === 'object') {
    const own = [{ at, value }]
    return [...own, ...Object.entries(value).flatMap(([key, child]) => leaves(child, `${at}/${key}`))]
  }
  return [{ at, value }]
}

function setAt(body: unknown, at: string, value: unknown): void {
  const parts = at.split('/').slice(1)
  const last = parts.pop()!
  let node = body as Record<string, unknown>
  for (const part of parts) node = node[part] as Record<string, unknown>
  node[last] = value
}

interface Case {
  route: Route
  n: number
  what: string
  text: string
  /** Whether the mutation leaves the fields that say where the request is stored as they were. */
  checkStored: boolean
}

let counter = 0
/** Every hostile variant of a route's body. */
function casesOf(route: Route): Case[] {
  const cases: Case[] = []
  const make = (what: string, mutate: (body: Record<string, unknown>) => string | void, checkStored = true) => {
    const n = ++counter
    const body = route.body(n)
    const text = mutate(body) ?? bodyText(body)
    cases.push({ route, n, what, text, checkStored })
  }
  const template = route.body(0)
  // Fields that name where the request is stored: changed, the request is looked for elsewhere.
  const identifying = /^(\/sessionId|\/userId|\/endUserId|\/release|\/groupKey|\/logs\/0\/sessionId|\/requestId|\/uuid|\/events\/0\/uuid)$/
  for (const { at, value } of leaves(template)) {
    if (at === '') continue
    const checkStored = !identifying.test(at)
    if (typeof value === 'string') for (const hostile of HOSTILE_STRINGS) make(`${at} = ${hostile.slice(0, 40)} (${hostile.length})`, (body) => setAt(body, at, hostile), checkStored)
    if (typeof value === 'number') for (const hostile of HOSTILE_NUMBERS) make(`${at} = ${hostile}`, (body) => setAt(body, at, raw(hostile)), checkStored)
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      // Keys in every object: unknown fields of a closed one are ignored, a free-form one keeps them.
      for (const key of HOSTILE_KEYS) {
        make(`${at || '/'} key ${JSON.stringify(key.slice(0, 20))} (${key.length})`, (body) => {
          const marker = '@@key@@'
          setAt(body, `${at}/${marker}`, { v: 1 })
          return bodyText(body).replace(`"${marker}"`, JSON.stringify(key))
        })
      }
    }
  }
  // A known field twice: JSON.parse keeps the last, valid one.
  const first = Object.keys(template)[0]
  make(`duplicate ${first}`, (body) => bodyText(body).replace(/^\{/, `{${JSON.stringify(first)}:"\\u0000\\ud800",`))
  for (const at of route.freeForm) {
    // Every hostile key in one object: some are one key once stored ("a\u0000b" and "ab", two lone surrogates).
    make(`${at} every hostile key at once`, (body) => {
      const marker = '@@allkeys@@'
      setAt(body, `${at}/${marker}`, 1)
      const keys = [...HOSTILE_KEYS, 'ab', '\ufffd'].map((key, i) => `${JSON.stringify(key)}:${i}`).join(',')
      return bodyText(body).replace(`"${marker}":1`, keys)
    })
    for (const nesting of NESTINGS) make(`${at} nested ${nesting.slice(0, 12)}… (${nesting.length} chars)`, (body) => setAt(body, `${at}/deep`, raw(nesting)))
    make(`${at} duplicate key`, (body) => {
      const marker = '@@dupkey@@'
      setAt(body, `${at}/${marker}`, 1)
      return bodyText(body).replace(`"${marker}":1`, '"dup":1,"dup":"two","dup":{"three":3}')
    })
  }
  return cases
}
/** What is wrong with a refusal, if anything: WIRE.md's shape, a 4xx, and nothing of the service's insides. */
function refusalProblem(status: number, text: string): string | null {
  let answer: { success?: unknown; error?: { code?: unknown; message?: unknown }; path?: unknown }
  try {
    answer = JSON.parse(text)
  } catch {
    return 'not JSON'
  }
  if (status !== 400 && status !== 413) return `status ${status}`
  if (answer.success !== false || typeof answer.error?.code !== 'string' || typeof answer.error?.message !== 'string') return 'not the WIRE.md error shape'
  if (/\n\s+at |node_modules|\/src\/|TypeError|RangeError|SyntaxError|postgres|pglite|syntax error|relation |column |violates|invalid input/i.test(text)) return 'internal message'
  return null
}

const SUSPECT_LOG = /unhandled error|could not be stored|commit failed|rows refused/

describe('hostile bodies on every ingestion route', () => {
  let core: TestCore
  const logged = memoryLogger('warn')
  beforeAll(async () => {
    // A writer that waits a little for company, so that requests sent at once commit together.
    core = await startCore({ log: logged.log, writer: { lingerMs: 30 } })
  })
  afterAll(() => core?.close())

  for (const route of ROUTES) {
    test(`${route.path}: each hostile position is 200 and stored or a clean 4xx, and the well-formed requests committed with it are stored`, async () => {
      const cases = casesOf(route)
      const failures: string[] = []
      const logStart = logged.lines.length
      // A few at a time, each beside well-formed requests of two other routes, fired at once.
      for (let i = 0; i < cases.length; i += 6) {
        const group = cases.slice(i, i + 6)
        const neighbours = group.flatMap((_, j) => [ROUTES[(ROUTES.indexOf(route) + 1 + j) % ROUTES.length], ROUTES[(ROUTES.indexOf(route) + 7 + j) % ROUTES.length]]).map((r) => ({ route: r, n: ++counter }))
        const sends = [
          ...group.map((c) => core.post(`/api/ingestion${c.route.path}`, c.text)),
          ...neighbours.map((c) => core.post(`/api/ingestion${c.route.path}`, bodyText(c.route.body(c.n)))),
        ]
        const answers = await Promise.all(sends.map(async (res) => ({ status: (await res).status, text: await (await res).text() })))
        for (const [j, c] of group.entries()) {
          const { status, text } = answers[j]
          if (status === 200) {
            if (c.checkStored && !(await c.route.stored(core, c.n))) failures.push(`${c.what}: 200 but not stored`)
          } else {
            const problem = refusalProblem(status, text)
            if (problem) failures.push(`${c.what}: ${problem}: ${status} ${text.slice(0, 200)}`)
          }
        }
        for (const [j, c] of neighbours.entries()) {
          const { status, text } = answers[group.length + j]
          if (status !== 200) failures.push(`neighbour ${c.route.path} of [${group.map((g) => g.what).join(' | ')}]: ${status} ${text.slice(0, 200)}`)
          else if (!(await c.route.stored(core, c.n))) failures.push(`neighbour ${c.route.path}: 200 but not stored`)
        }
      }
      const suspect = logged.lines.slice(logStart).filter((line) => SUSPECT_LOG.test(line)).map((line) => JSON.stringify(line.slice(0, 600)))
      expect({ failures, suspect }).toEqual({ failures: [], suspect: [] })
    }, 300_000)
  }

  test('bare bodies (a string, an array, null, a number, true) are 400 in WIRE.md shape on every route', async () => {
    for (const route of ROUTES) {
      for (const text of ['"x"', '[]', '[{}]', 'null', '0', '1e400', 'true', '"\\ud800"']) {
        const res = await core.post(`/api/ingestion${route.path}`, text)
        expect([route.path, text, refusalProblem(res.status, await res.text())]).toEqual([route.path, text, null])
      }
    }
  })
})

describe('hostile values are stored as README says', () => {
  let core: TestCore
  beforeAll(async () => {
    core = await startCore()
  })
  afterAll(() => core?.close())

  test('free-form properties: NUL dropped from keys and texts, a lone surrogate as U+FFFD, `__proto__` an own key, 1e400 as null, -0 as 0, the last of duplicate keys', async () => {
    const text =
      '{"sessionId":"fz-values","eventName":"e\\u0000v","eventProperties":{"__proto__":{"polluted":1},"constructor":"c","a\\u0000b":"x\\u0000y","\\ud800":"\\udfff","big":1e400,"neg":-0,"tiny":1e-400,"dup":1,"dup":2,"esc":"\\\\u0000"}}'
    const res = await core.post('/api/ingestion/customEvent', text)
    expect(res.status).toBe(200)
    const [row] = await core.database.db.rows<{ name: string; properties: Record<string, unknown> }>(sql`select event_name as name, properties from events where session_id = 'fz-values'`)
    expect(row.name).toBe('ev')
    expect(JSON.parse(JSON.stringify(row.properties))).toEqual(
      JSON.parse('{"__proto__":{"polluted":1},"constructor":"c","ab":"xy","\\ufffd":"\\ufffd","big":null,"neg":0,"tiny":0,"dup":2,"esc":"\\\\u0000"}'),
    )
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  })

  test('identify: `__proto__` in userAttributes is an attribute like another, merged, and pollutes nothing', async () => {
    for (const attributes of ['{"__proto__":{"polluted":1},"plan":"a"}', '{"__proto__":{"admin":true},"constructor":{"prototype":{"x":1}}}']) {
      const res = await core.post('/api/ingestion/user', `{"userId":"fz-proto","sessionId":"fz-proto-s","userAttributes":${attributes}}`)
      expect(res.status).toBe(200)
    }
    const [row] = await core.database.db.rows<{ attributes: unknown }>(sql`select attributes from end_users where end_user_id = 'fz-proto'`)
    expect(JSON.parse(JSON.stringify(row.attributes))).toEqual(JSON.parse('{"__proto__":{"admin":true},"plan":"a","constructor":{"prototype":{"x":1}}}'))
    expect(({} as Record<string, unknown>).polluted ?? ({} as Record<string, unknown>).admin ?? ({} as Record<string, unknown>).x).toBeUndefined()
  })

  test('a source map URL with NUL in it is stored without it, as its name is, not refused by the database', async () => {
    const res = await core.post('/api/ingestion/sourcemaps', '{"release":"fz-url@1","files":[{"name":"a\\u0000pp.js.map","url":"https://shop.test/a\\u0000pp.js","content":' + JSON.stringify(MAP) + '}]}')
    expect([res.status, await res.json()]).toEqual([200, { success: true, stored: ['app.js.map'] }])
    const rows = await core.database.db.rows<{ name: string; url: string }>(sql`select name, url from sourcemaps where release = 'fz-url@1'`)
    expect(rows).toEqual([{ name: 'app.js.map', url: 'https://shop.test/app.js' }])
  })

  test('bytes that are not UTF-8 (0xFF, an overlong NUL, an encoded surrogate) in a string, sent plain or gzipped, are a clean answer on every route', async () => {
    const { gzipSync } = await import('node:zlib')
    for (const route of ROUTES) {
      for (const bad of [[0xff], [0xc0, 0x80], [0xed, 0xa0, 0x80]]) {
        const text = bodyText(route.body(++counter))
        const at = text.indexOf('fz-') >= 0 ? text.lastIndexOf('"}') : -1
        const bytes = at >= 0 ? Buffer.concat([Buffer.from(text.slice(0, at)), Buffer.from(bad), Buffer.from(text.slice(at))]) : Buffer.from(text)
        for (const [body, headers] of [[bytes, {}], [gzipSync(bytes), { 'content-encoding': 'gzip' }]] as const) {
          const res = await core.request(`/api/ingestion${route.path}`, { method: 'POST', headers: { authorization: `Bearer ${core.key}`, ...headers }, body })
          const answer = await res.text()
          expect([route.path, bad, res.status === 200 ? null : refusalProblem(res.status, answer)]).toEqual([route.path, bad, null])
        }
      }
    }
  })
})

describe('hostile keys', () => {
  let core: TestCore
  beforeAll(async () => {
    core = await startCore()
  })
  afterAll(() => core?.close())

  test('a key in the body or query that is NUL, a lone surrogate, a number past float range, an object, 100k chars or bad percent-encoding is a 401 in WIRE.md shape on every route', async () => {
    const bodyKeys = ['"\\u0000"', '"\\ud800"', '1e400', '{}', '[]', 'null', 'true', JSON.stringify('k'.repeat(100_000))]
    const queryKeys = ['%', '%E0%A4%A', '%00', '%ED%A0%80', 'a&apiKey=b', 'k'.repeat(10_000)]
    for (const route of ROUTES) {
      const body = bodyText(route.body(++counter))
      const sends = [
        ...bodyKeys.map((key) => core.request(`/api/ingestion${route.path}`, { method: 'POST', body: body.replace(/^\{/, `{"apiKey":${key},`) })),
        ...queryKeys.map((key) => core.request(`/api/ingestion${route.path}?apiKey=${key}`, { method: 'POST', body })),
      ]
      for (const res of await Promise.all(sends)) {
        const answer = await res.json()
        expect([route.path, res.status, answer.success, answer.error?.code]).toEqual([route.path, 401, false, expect.stringMatching(/^(missing|invalid)_api_key$/)])
      }
    }
  })
})
