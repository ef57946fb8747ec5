import { describe, expect, test } from 'bun:test'
import { ConfigError } from '@sightline/core/config'
import { clientAddress, isPublicAddress, normalizeAddress } from '@sightline/core/http/client-ip'

describe('addresses', () => {
  test.each([
    ['203.0.113.7', '203.0.113.7'],
    [' 203.0.113.7:51234 ', '203.0.113.7'],
    ['::ffff:8.8.8.8', '8.8.8.8'],
    ['::FFFF:808:808', '8.8.8.8'],
    ['0:0:0:0:0:ffff:c000:201', '192.0.2.1'],
    // The zeros split around `::` otherwise: still IPv4-mapped.
    ['0::ffff:8.8.8.8', '8.8.8.8'],
    ['::0:FFFF:a00:1', '10.0.0.1'],
    ['0:0::ffff:7f00:1', '127.0.0.1'],
    ['::ffff:0:808:808', '::ffff:0:808:808'],
    ['::ffff:7f00:1', '127.0.0.1'],
    ['[2001:DB8::1]:443', '2001:db8::1'],
    ['fe80::1%eth0', 'fe80::1'],
    ['unknown', null],
    ['999.1.1.1', null],
    ['', null],
  ])('%j normalizes to %j', (raw, expected) => {
    expect(normalizeAddress(raw)).toBe(expected)
  })

  test.each([
    ['8.8.8.8', true],
    ['2001:4860:4860::8888', true],
    ['::ffff:1.1.1.1', true],
    ['::ffff:101:101', true],
    ['::ffff:a00:1', false],
    ['10.1.2.3', false],
    ['172.20.0.1', false],
    ['192.168.1.1', false],
    ['127.0.0.1', false],
    ['::1', false],
    ['169.254.1.1', false],
    ['100.64.0.1', false],
    ['fd12::1', false],
    ['fe80::1', false],
    ['192.0.2.1', false],
    ['2001:db8::1', false],
    ['3fff:abc::1', false],
    ['5f00:1::1', false],
    ['224.0.0.1', false],
    ['not an ip', false],
    // 6to4 (2002::/16) carries an IPv4 address in its second and third groups: a private one is not located.
    ['2002:a00:1::1', false],
    ['2002:c0a8:101::1', false],
    ['2002:7f00:1:0:0:0:0:1', false],
    ['2002::1', false],
    ['2002:808:808::1', true],
    // NAT64 (64:ff9b::/96) carries one in its last two groups, however the address is written.
    ['64:ff9b::a00:1', false],
    ['64:ff9b::10.0.0.1', false],
    ['64:ff9b:0:0:0:0:c0a8:101', false],
    ['64:ff9b::808:808', true],
    // Older forms that locate no one: IPv4-compatible (::/96), IPv4-translated (::ffff:0:0:0/96), site-local.
    ['::a00:1', false],
    ['::808:808', false],
    ['::ffff:0:a00:1', false],
    ['fec0::1', false],
  ])('%s is public: %p', (address, expected) => {
    expect(isPublicAddress(address)).toBe(expected)
  })
})

describe('X-Forwarded-For behind trusted proxies', () => {
  const behind = clientAddress(['127.0.0.1/32', '10.0.0.0/8', 'fd00::/8'])

  test('without trusted proxies the socket address is the client, whatever the header says', () => {
    const direct = clientAddress([])
    expect(direct('203.0.113.9', '8.8.8.8')).toBe('203.0.113.9')
    expect(direct('::ffff:127.0.0.1', '8.8.8.8')).toBe('127.0.0.1')
    expect(direct(null, '8.8.8.8')).toBeNull()
  })

  test('a socket that is not a trusted proxy: the header is ignored', () => {
    expect(behind('203.0.113.9', '8.8.8.8')).toBe('203.0.113.9')
  })

  test('the chain is walked from the right to the first address that is not a trusted proxy', () => {
    expect(behind('127.0.0.1', '8.8.8.8')).toBe('8.8.8.8')
    expect(behind('::ffff:127.0.0.1', '8.8.8.8')).toBe('8.8.8.8')
    // A client-written spoof on the left is never reached.
    expect(behind('127.0.0.1', '1.1.1.1, 8.8.8.8')).toBe('8.8.8.8')
    expect(behind('127.0.0.1', '1.1.1.1, 8.8.8.8, 10.1.1.1')).toBe('8.8.8.8')
    expect(behind('fd00::5', '8.8.4.4:1234,  [fd00::9]:80')).toBe('8.8.4.4')
    // All trusted: the leftmost is the client.
    expect(behind('127.0.0.1', '10.0.0.1, 10.0.0.2')).toBe('10.0.0.1')
  })

  test('empty members (an empty header line among several) are skipped, not taken for garbage', () => {
    expect(behind('127.0.0.1', '8.8.8.8, ')).toBe('8.8.8.8')
    expect(behind('127.0.0.1', '1.1.1.1, 8.8.8.8,, 10.1.1.1, ')).toBe('8.8.8.8')
    expect(behind('127.0.0.1', ', 8.8.8.8')).toBe('8.8.8.8')
    expect(behind('127.0.0.1', '10.0.0.1, , 10.0.0.2')).toBe('10.0.0.1')
  })

  test('an IPv4-mapped IPv6 range in TRUSTED_PROXIES covers the IPv4 addresses it maps', () => {
    const mapped = clientAddress(['::ffff:10.0.0.0/104'])
    expect(mapped('10.1.2.3', '8.8.8.8')).toBe('8.8.8.8')
    expect(mapped('::ffff:10.1.2.3', '8.8.8.8')).toBe('8.8.8.8')
    expect(mapped('11.1.2.3', '8.8.8.8')).toBe('11.1.2.3')
    expect(clientAddress(['::ffff:10.0.0.1/128'])('10.0.0.1', '8.8.8.8')).toBe('8.8.8.8')
  })

  test('an IPv4-mapped range shorter than /96 holds every IPv4 address: a configuration error, not a trust of every client', () => {
    // ::ffff:10.0.0.0/8 is ::/8; taken as written, any client's X-Forwarded-For would be believed.
    for (const wide of ['::ffff:10.0.0.0/8', '::ffff:192.168.0.0/16', '0:0:0:0:0:ffff:10.0.0.0/95', '::ffff:a00:0/24', '0::ffff:10.0.0.0/8', '0:0::ffff:a00:0/24']) {
      expect(() => clientAddress([wide])).toThrow(ConfigError)
    }
    // From /96 on, a mapped range is the IPv4 range it maps.
    expect(clientAddress(['::ffff:0.0.0.0/96'])('10.1.2.3', '8.8.8.8')).toBe('8.8.8.8')
    expect(clientAddress(['::ffff:10.0.0.0/104'])('11.1.2.3', '8.8.8.8')).toBe('11.1.2.3')
  })

  test('no header: the proxy itself; garbage written by a trusted hop: no address', () => {
    expect(behind('10.2.3.4', null)).toBe('10.2.3.4')
    expect(behind('127.0.0.1', '8.8.8.8, bogus')).toBeNull()
  })

  test('a malformed TRUSTED_PROXIES entry is a configuration error', () => {
    for (const bad of ['10.0.0.0/33', 'fd00::/129', 'example.com', '10.0.0.0/8/1', '10.0.0.0/x']) {
      expect(() => clientAddress([bad])).toThrow(ConfigError)
    }
    expect(() => clientAddress(['2001:db8::/32', '192.0.2.1'])).not.toThrow()
  })
})
