import type { Caller } from '../../http/auth'
import { sessionTouches, type SessionTouches } from '../sessions/touch'
import type { IpInfoBody } from './model'

/** Where an address is, as stored on sessions and end users and answered by `/ip-info`. */
export interface Geo {
  country: string | null
  region: string | null
  city: string | null
  latitude: number | null
  longitude: number | null
  timezone: string | null
}

type Names = { names?: Record<string, string> }

/** The two record layouts in use: MaxMind's GeoIP2/GeoLite2 City (nested), and DB-IP Lite as ip-location-db ships it (flat). */
export interface GeoRecord {
  country?: { iso_code?: string }
  subdivisions?: Names[]
  city?: Names | string
  location?: { latitude?: number; longitude?: number; time_zone?: string }
  country_code?: string
  state1?: string
  latitude?: number
  longitude?: number
  timezone?: string
}

const text = (value: unknown): string | null => (typeof value === 'string' && value !== '' ? value : null)
const number = (value: unknown): number | null => (typeof value === 'number' && Number.isFinite(value) ? value : null)
const english = (record: Names | undefined): string | null => text(record?.names?.en)

/** A database record as a Geo; null when the record says nothing of where. */
export function geoFromRecord(record: GeoRecord | null | undefined): Geo | null {
  if (!record) return null
  const geo: Geo = {
    country: text(record.country_code) ?? text(record.country?.iso_code),
    region: text(record.state1) ?? english(record.subdivisions?.[0]),
    city: typeof record.city === 'string' ? text(record.city) : english(record.city),
    latitude: number(record.latitude) ?? number(record.location?.latitude),
    longitude: number(record.longitude) ?? number(record.location?.longitude),
    timezone: text(record.timezone) ?? text(record.location?.time_zone),
  }
  return Object.values(geo).every((v) => v === null) ? null : geo
}

/**
 * Longer than any address written as text (a full IPv6 address with a dotted IPv4 tail, in brackets,
 * with a port, is 55 characters): a longer `ip` is no address, and is not parsed as one.
 */
const MAX_ADDRESS_CHARS = 64

/** The body's `ip` when it is a public address, else the address the request came from. */
export const addressToLocate = (claimed: string | null | undefined, requestAddress: string | null, isPublic: (address: string) => boolean): string | null =>
  claimed && claimed.length <= MAX_ADDRESS_CHARS && isPublic(claimed) ? claimed : requestAddress

/**
 * What `/ip-info` stores: where the client is, on its session and on its end user: the one named, else
 * the session's, made (newEndUserId) when the session has none (see sessionTouches).
 */
export function ipInfoRows(body: IpInfoBody, caller: Caller, geo: Geo | null, now: number, newEndUserId: () => string): SessionTouches {
  const touches = sessionTouches(caller, [{ sessionId: body.sessionId, endUserId: body.endUserId ?? null, at: now }], { newEndUserId, answered: body.sessionId })
  for (const of of touches.ofSessions ?? []) of.made.geo = geo
  return { ...touches, sessions: touches.sessions.map((s) => ({ ...s, geo })), endUsers: touches.endUsers.map((u) => ({ ...u, geo })) }
}
