import { BlockList, isIP } from 'node:net'
import { ConfigError } from '../config'

/**
 * The address a request came from. The socket's peer is the truth; `X-Forwarded-For` is believed only
 * as far as it was written by proxies the operator trusts (`TRUSTED_PROXIES`): the chain is walked from
 * the right, and the first address that is not a trusted proxy is the client. Anything else in the
 * header was written by the client and proves nothing.
 */
export type ClientAddress = (socketAddress: string | null | undefined, forwardedFor: string | null | undefined) => string | null

type Family = 'ipv4' | 'ipv6'

/** A bare address in canonical form: IPv4-mapped IPv6 becomes IPv4, zone ids go; null when invalid. */
export function normalizeAddress(raw: string | null | undefined): string | null {
  if (!raw) return null
  let address = raw.trim()
  // X-Forwarded-For entries sometimes carry a port: "203.0.113.7:51234", "[2001:db8::1]:443".
  const bracketed = address.match(/^\[([^\]]+)\](?::\d+)?$/)
  if (bracketed) address = bracketed[1]
  else if (/^[\d.]+:\d+$/.test(address)) address = address.slice(0, address.indexOf(':'))
  const zone = address.indexOf('%')
  if (zone !== -1) address = address.slice(0, zone)
  const version = isIP(address)
  if (version === 0) return null
  if (version === 4) return address
  return mappedIpv4(address) ?? address.toLowerCase()
}

/**
 * The IPv4 address an IPv4-mapped IPv6 one (::ffff:0:0/96) is, however it is written: `::ffff:8.8.8.8`,
 * in hex (`::ffff:808:808`, as a client may send it in /ip-info's `ip`), spelled out or with its zeros
 * split around `::` (`0::ffff:...`, `0:0::ffff:...`). Read from the groups, not the spelling: a range
 * in TRUSTED_PROXIES written so must meet the same /96 check as `::ffff:`, and a client address the same lookup.
 */
function mappedIpv4(address: string): string | null {
  const groups = ipv6Groups(address)
  if (groups.slice(0, 5).some((group) => group !== 0) || groups[5] !== 0xffff) return null
  return [groups[6] >> 8, groups[6] & 255, groups[7] >> 8, groups[7] & 255].join('.')
}

const familyOf = (address: string): Family => (isIP(address) === 6 ? 'ipv6' : 'ipv4')

/** `10.0.0.0/8`, `2001:db8::/32` or a bare address; a malformed entry is a configuration error. */
export function parseCidrs(cidrs: readonly string[]): BlockList {
  const list = new BlockList()
  for (const entry of cidrs) {
    const [base, bits, extra] = entry.split('/')
    const address = normalizeAddress(base)
    // An IPv4-mapped range (`::ffff:10.0.0.0/104`) is an IPv6 one: IPv4 addresses are checked against it as mapped.
    const mapped = address !== null && bits !== undefined && isIP(address) === 4 && isIP(base.trim()) === 6
    const family = address ? (mapped ? 'ipv6' : familyOf(address)) : undefined
    const max = family === 'ipv6' ? 128 : 32
    const prefix = bits === undefined ? max : Number(bits)
    if (!address || !family || extra !== undefined || !/^\d+$/.test(bits ?? String(max)) || prefix > max) {
      throw new ConfigError(`TRUSTED_PROXIES: "${entry}" is not an IP address or CIDR range`)
    }
    // `::ffff:10.0.0.0/8` is the IPv6 range ::/8, which holds every IPv4 address mapped: meant as 10/8
    // (as some tools read it), it would trust any client's X-Forwarded-For. Refused, not guessed at.
    if (mapped && prefix < 96) {
      throw new ConfigError(`TRUSTED_PROXIES: "${entry}" is an IPv4-mapped range shorter than /96, which covers every IPv4 address; write ${address}/${prefix} for IPv4, or a prefix of 96 + the IPv4 one`)
    }
    list.addSubnet(mapped ? `::ffff:${address}` : address, prefix, family)
  }
  return list
}

export function clientAddress(trustedProxies: readonly string[]): ClientAddress {
  const trusted = parseCidrs(trustedProxies)
  const isTrusted = (address: string) => trusted.check(address, familyOf(address))
  const anyTrusted = trustedProxies.length > 0

  return (socketAddress, forwardedFor) => {
    let client = normalizeAddress(socketAddress)
    if (!anyTrusted || !client || !forwardedFor || !isTrusted(client)) return client
    const hops = forwardedFor.split(',')
    for (let i = hops.length - 1; i >= 0; i--) {
      // An empty member (as an empty header line among several leaves) is no hop: lists may hold them (RFC 9110 5.6.1).
      if (!hops[i].trim()) continue
      // A hop a trusted proxy wrote that is not an address: nothing left of it can be believed.
      const hop = normalizeAddress(hops[i])
      if (!hop) return null
      client = hop
      if (!isTrusted(hop)) return hop
    }
    return client
  }
}

/**
 * Special-purpose ranges (IANA IPv4/IPv6 special-purpose registries, RFC 6890): private, loopback,
 * link-local, shared, documentation (3fff::/20 too, RFC 9637), benchmarking, SRv6 segment ids
 * (5f00::/16, RFC 9602), multicast, reserved, and the deprecated IPv4-compatible (::/96), IPv4-translated
 * (::ffff:0:0:0/96) and site-local (fec0::/10) forms. None of them says where a person is, so they
 * never reach the GeoIP lookup.
 */
const NOT_PUBLIC = parseCidrsUnchecked([
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24],
  ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
  ['::', 96], ['::ffff:0:0:0', 96], ['64:ff9b:1::', 48], ['100::', 64], ['2001::', 23], ['2001:db8::', 32], ['3fff::', 20], ['5f00::', 16],
  ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8],
])

function parseCidrsUnchecked(ranges: [string, number][]): BlockList {
  const list = new BlockList()
  for (const [address, prefix] of ranges) list.addSubnet(address, prefix, familyOf(address))
  return list
}

/** An address that can be located: valid, and not private, loopback or otherwise special. */
export function isPublicAddress(raw: string | null | undefined): boolean {
  const address = normalizeAddress(raw)
  if (address === null || NOT_PUBLIC.check(address, familyOf(address))) return false
  const carried = carriedIpv4(address)
  return carried === null || isPublicAddress(carried)
}

/**
 * The IPv4 address an IPv6 one carries, public only when that one is: 6to4 (2002::/16) in its second
 * and third groups, NAT64 (64:ff9b::/96) in its last two. Null for any other address.
 */
function carriedIpv4(address: string): string | null {
  if (familyOf(address) !== 'ipv6') return null
  const groups = ipv6Groups(address)
  const nat64 = groups[0] === 0x64 && groups[1] === 0xff9b && groups.slice(2, 6).every((group) => group === 0)
  const at = groups[0] === 0x2002 ? 1 : nat64 ? 6 : -1
  if (at === -1) return null
  const [high, low] = [groups[at], groups[at + 1]]
  return [high >> 8, high & 255, low >> 8, low & 255].join('.')
}

/** The eight 16-bit groups of a valid IPv6 address, `::` filled in and a dotted tail as two groups. */
function ipv6Groups(address: string): number[] {
  const word = (text: string) => {
    if (!text.includes('.')) return [parseInt(text, 16)]
    const [a, b, c, d] = text.split('.').map(Number)
    return [(a << 8) | b, (c << 8) | d]
  }
  const words = (part: string | undefined) => (part ? part.split(':').flatMap(word) : [])
  const [head, tail] = address.split('::')
  const front = words(head)
  const back = words(tail)
  return [...front, ...Array<number>(8 - front.length - back.length).fill(0), ...back]
}
