import { UAParser } from 'ua-parser-js'

export interface ParsedUserAgent {
  userAgent: string
  browser: string | null
  browserVersion: string | null
  os: string | null
  osVersion: string | null
  deviceType: string | null
  deviceVendor: string | null
  deviceModel: string | null
}

const CACHE_SIZE = 2_000
// Parsing costs tens of microseconds and a session sends the same string with every chunk; a small
// cache, emptied when full, keeps that off the hot path without growing without bound.
const cache = new Map<string, ParsedUserAgent>()

/** Browser, OS and device of a User-Agent string (ua-parser-js); null for an absent or empty one. */
export function parseUserAgent(userAgent: string | null | undefined): ParsedUserAgent | null {
  if (!userAgent) return null
  const ua = userAgent.length > 1024 ? userAgent.slice(0, 1024) : userAgent
  const known = cache.get(ua)
  if (known) return known
  const { browser, os, device } = UAParser(ua)
  const parsed: ParsedUserAgent = {
    userAgent: ua,
    browser: browser.name ?? null,
    browserVersion: browser.version ?? null,
    os: os.name ?? null,
    osVersion: os.version ?? null,
    // ua-parser-js names only the devices it can tell apart (mobile, tablet, smarttv, ...): a
    // recognised browser on a recognised OS with no device type is a desktop.
    deviceType: device.type ?? (browser.name && os.name ? 'desktop' : null),
    deviceVendor: device.vendor ?? null,
    deviceModel: device.model ?? null,
  }
  if (cache.size >= CACHE_SIZE) cache.clear()
  cache.set(ua, parsed)
  return parsed
}
