import { sql, type SQL } from 'drizzle-orm'
import type { E2eCore } from '../tracker/helpers/e2e'
import type { Handed } from './browser'

/**
 * Delivery accounting: what a page produced (every distinct item in the bodies its tracker handed to
 * the browser; a retry or a resend of an item counts once) against what core stored. Items are keyed
 * the same way on both sides, so "stored" means these very items, not merely as many.
 */

export const KINDS = ['custom events', 'replay chunks', 'replay events', 'logs', 'error reports', 'spans', 'network errors', 'heartbeats', 'session ends'] as const
export type Kind = (typeof KINDS)[number]
export type Ledger = Record<Kind, Set<string>>

/** A record with one value per kind. */
export const perKind = <T>(value: (kind: Kind) => T) => Object.fromEntries(KINDS.map((kind) => [kind, value(kind)])) as Record<Kind, T>

const emptyLedger = (): Ledger => perKind(() => new Set<string>())

/** Heartbeats and goodbyes carry no id and are never resent: each one is its own item, numbered. */
const numbered = (count: number, kind: string) => Array.from({ length: count }, (_, i) => `${kind} ${i + 1}`)

export interface Produced {
  ledger: Ledger
  /** Every session the page's items belong to. */
  sessions: string[]
  /** The decoded text of every body, for the masked-text check. */
  texts: string[]
}

export function decodeHanded(handed: Handed): { path: string; body: any; text: string } {
  const bytes = handed.gzip ? Bun.gunzipSync(handed.body as Uint8Array<ArrayBuffer>) : handed.body
  const text = new TextDecoder().decode(bytes)
  return { path: new URL(handed.url).pathname.replace(/^.*\/api\/ingestion/, ''), body: JSON.parse(text), text }
}

export function produced(handed: Handed[]): Produced {
  const ledger = emptyLedger()
  const sessions = new Set<string>()
  const texts: string[] = []
  let heartbeats = 0
  let goodbyes = 0
  for (const request of handed) {
    const { path, body, text } = decodeHanded(request)
    texts.push(text)
    if (typeof body.sessionId === 'string') sessions.add(body.sessionId)
    const add = (kind: Kind, keys: string[]) => keys.forEach((key) => ledger[kind].add(key))
    switch (path) {
      case '/customEvent/batch':
        add('custom events', body.events.map((e: any) => e.uuid))
        break
      case '/events': {
        const chunk = `${body.windowId}#${body.seq}`
        add('replay chunks', [chunk])
        add('replay events', body.events.map((_: unknown, i: number) => `${chunk}#${i}`))
        break
      }
      case '/logs':
        add('logs', body.logs.map((l: any) => `${l.level}|${l.message}|${l.timestampMs}`))
        break
      case '/errors':
        add('error reports', body.errors.map((e: any) => `${e.name}|${e.message}|${e.timestampMs}`))
        break
      case '/spans/batch':
        add('spans', body.spans.map((s: any) => `${s.traceId}/${s.spanId}`))
        break
      case '/network':
        add('network errors', body.errors.map((e: any) => e.requestId))
        break
      case '/heartbeat':
        add('heartbeats', [`heartbeat ${++heartbeats}`])
        break
      case '/session-end':
        add('session ends', [`session end ${++goodbyes}`])
        break
      default:
        throw new Error(`the tracker sent to ${path}, which this accounting does not know`)
    }
  }
  return { ledger, sessions: [...sessions], texts }
}

/** One line of core's request log (`method`, `path`, `status`), parsed. */
export interface CoreRequest {
  method: string
  path: string
  status: number
}

export const coreRequests = (lines: string[]): CoreRequest[] =>
  lines.map((line) => JSON.parse(line)).filter((entry) => entry.msg === 'request' && String(entry.path).startsWith('/api/ingestion/'))

const inSessions = (sessions: string[]): SQL => sql`session_id in (${sql.join(sessions.map((id) => sql`${id}`), sql`, `)})`

/**
 * What core stored of these sessions, keyed like `produced`. Heartbeats and goodbyes leave state, not
 * rows (a presence row while live, the session's end time after), so they count as stored when core
 * acknowledged them: its 200 means committed.
 */
export async function stored(e2e: E2eCore, sessions: string[], requests: CoreRequest[]): Promise<Ledger> {
  const ledger = emptyLedger()
  const acknowledged = (path: string) => requests.filter((r) => r.method === 'POST' && r.path === `/api/ingestion${path}` && r.status === 200).length
  ledger.heartbeats = new Set(numbered(acknowledged('/heartbeat'), 'heartbeat'))
  ledger['session ends'] = new Set(numbered(acknowledged('/session-end'), 'session end'))
  if (sessions.length === 0) return ledger
  const where = inSessions(sessions)
  const rows = async <T>(query: SQL) => e2e.rows<T>(query)
  const ms = (column: string) => sql.raw(`round(extract(epoch from ${column}) * 1000)::bigint::text`)
  for (const e of await rows<{ uuid: string }>(sql`select uuid::text as uuid from events where ${where}`)) ledger['custom events'].add(e.uuid)
  for (const c of await rows<{ window_id: string; seq: number; event_count: number }>(sql`select window_id, seq, event_count from replay_chunks where ${where}`)) {
    const chunk = `${c.window_id}#${c.seq}`
    ledger['replay chunks'].add(chunk)
    for (let i = 0; i < c.event_count; i++) ledger['replay events'].add(`${chunk}#${i}`)
  }
  for (const l of await rows<{ key: string }>(sql`select level || '|' || message || '|' || ${ms('timestamp')} as key from logs where ${where}`)) ledger.logs.add(l.key)
  for (const e of await rows<{ key: string }>(sql`select name || '|' || message || '|' || ${ms('timestamp')} as key from error_events where ${where}`)) ledger['error reports'].add(e.key)
  for (const s of await rows<{ key: string }>(sql`select trace_id || '/' || span_id as key from spans where ${where}`)) ledger.spans.add(s.key)
  for (const n of await rows<{ request_id: string }>(sql`select request_id from network_errors where ${where}`)) ledger['network errors'].add(n.request_id)
  return ledger
}

/** Counts per kind, for assertions that read like the table. */
export const counts = (ledger: Ledger) => perKind((kind) => ledger[kind].size)

/** Items produced and not stored, per kind (empty arrays when everything arrived). */
export const missing = (sent: Ledger, got: Ledger) => perKind((kind) => [...sent[kind]].filter((key) => !got[kind].has(key)))

/**
 * Where any of `needles` occurs in what core stored: every row of every table as text, and every
 * replay chunk decompressed (they are stored zstd-compressed, where a plain text search sees nothing).
 */
export async function storedTextContaining(e2e: E2eCore, needles: string[]): Promise<string[]> {
  const lower = needles.map((needle) => needle.toLowerCase())
  const found: string[] = []
  const check = (where: string, text: string) => {
    const hay = text.toLowerCase()
    for (const needle of lower) if (hay.includes(needle)) found.push(`${where}: "${needle}"`)
  }
  const tables = await e2e.rows<{ schema: string; name: string }>(
    sql`select table_schema as schema, table_name as name from information_schema.tables where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema') order by 1, 2`,
  )
  for (const { schema, name } of tables) {
    const rows = await e2e.rows<{ row: string }>(sql.raw(`select row_to_json(t)::text as row from "${schema}"."${name}" t`))
    rows.forEach((r, i) => check(`${schema}.${name} row ${i}`, r.row))
  }
  const chunks = await e2e.rows<{ data: Uint8Array }>(sql`select data from replay_chunks`)
  chunks.forEach((c, i) => check(`replay chunk ${i} (decompressed)`, new TextDecoder().decode(Bun.zstdDecompressSync(c.data))))
  return found
}

export interface DeliveryColumn {
  label: string
  sent: Ledger
  stored: Ledger
}

/** The README's delivery table: per kind, what the page produced and what core stored, per setup. */
export function deliveryTable(columns: DeliveryColumn[]): string {
  const header = ['what the page produced', ...columns.flatMap((c) => [`${c.label}: sent`, 'stored'])]
  const lines = [`| ${header.join(' | ')} |`, `|${header.map((_, i) => (i === 0 ? '---' : '---:')).join('|')}|`]
  for (const kind of KINDS) {
    const cells = columns.flatMap(({ sent, stored }) => {
      const s = sent[kind].size
      const g = [...sent[kind]].filter((key) => stored[kind].has(key)).length
      return [String(s), s === 0 ? '–' : `${g} (${Math.round((100 * g) / s)}%)`]
    })
    lines.push(`| ${kind} | ${cells.join(' | ')} |`)
  }
  return lines.join('\n')
}
