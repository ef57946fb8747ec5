import { describe, expect, test } from 'bun:test'
import { HAS_DATA, IS_OBJECT, JsonSyntaxError, scanReplayBody } from '@sightline/core/ingest/replay/scan'

/**
 * The replay body scanner against JSON.parse: it must accept exactly the bodies JSON.parse accepts
 * (after the UTF-8 decoding that came before it), give the same fields beside `events`, and read
 * each event's `type`, `timestamp` and `data` as JSON.parse would.
 */
const bytes = (text: string) => new TextEncoder().encode(text)
const parses = (text: string) => {
  try {
    JSON.parse(new TextDecoder().decode(bytes(text)))
    return true
  } catch {
    return false
  }
}

function scanned(text: string) {
  const result = scanReplayBody(bytes(text), 1_000)
  if (!result) return null
  const { events } = result
  return {
    fields: result.fields,
    events: events && Array.from({ length: events.count }, (_, k) => ({ type: events.type[k], timestamp: events.timestamp[k], flags: events.flags[k], text: new TextDecoder().decode(events.bytes.subarray(events.start[k], events.end[k])) })),
  }
}

/** What JSON.parse says the scanner should find. */
function expected(text: string) {
  const parsed = JSON.parse(new TextDecoder().decode(bytes(text)))
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return null
  const { events, ...fields } = parsed
  if (!Array.isArray(events)) return { fields: parsed, events: undefined }
  const number = (v: unknown) => (typeof v === 'number' ? v : NaN)
  return {
    fields,
    events: events.map((e: unknown) => {
      const object = typeof e === 'object' && e !== null && !Array.isArray(e)
      const { type, timestamp } = (object ? e : {}) as Record<string, unknown>
      return { type: number(type), timestamp: number(timestamp), flags: object ? IS_OBJECT | ('data' in (e as object) ? HAS_DATA : 0) : 0, value: e }
    }),
  }
}

function agrees(text: string) {
  if (!parses(text)) {
    expect(() => scanReplayBody(bytes(text), 1_000), text).toThrow(JsonSyntaxError)
    return
  }
  const got = scanned(text)
  const want = expected(text)
  if (want === null) return expect(got).toBeNull()
  expect(got!.fields).toEqual(want.fields)
  if (!want.events) return expect(got!.events).toBeUndefined()
  expect(got!.events!.map(({ text, ...e }) => ({ ...e, value: JSON.parse(text) }))).toEqual(want.events)
}

describe('replay body scanner', () => {
  test.each([
    '{"sessionId":"s","events":[{"type":3,"timestamp":1700000000000,"data":{"source":1}}]}',
    '  {\n "sessionId" : "s" ,\t"events" : [ { "type" : 2 , "timestamp" : 1.5e12 , "data" : null } , 42 , "x" , [] , {} ] }\r\n',
    '{"events":[{"type":-0,"timestamp":0,"data":[1,2,{"a":[true,false,null]}]},{"type":"3","timestamp":1,"data":1}]}',
    '{"events":[{"type":3,"type":"x","timestamp":1,"data":1},{"type":"x","type":4,"timestamp":2,"data":{}}]}',
    '{"ty\\u0070e":1,"events":[{"ty\\u0070e":5,"tim\\u0065stamp":7,"d\\u0061ta":"\\u00e9\\n\\"\\\\\\/"}]}',
    '{"events":[1],"events":[{"type":1,"timestamp":2,"data":3}]}',
    '{"events":[{"type":1,"timestamp":2,"data":3}],"events":"no longer an array"}',
    '{"events":{"0":{}}}',
    '{"__proto__":{"polluted":true},"constructor":1,"events":[]}',
    '{"sessionId":"ünïcødé ✓ 𝄞","events":[{"type":3,"timestamp":1e400,"data":"€"},{"type":1e0,"timestamp":12345678901234567890,"data":0}]}',
    '\ufeff{"events":[]}',
    '[{"type":1}]',
    '"events"',
    'null',
    '{}',
    '{"events":[]}',
    `{"events":[${'['.repeat(5000)}${']'.repeat(5000)}]}`,
  ])('agrees with JSON.parse on %s', (text) => agrees(text))

  test.each([
    '',
    ' ',
    '{',
    '{"events":[}',
    '{"events":[1,]}',
    '{"a":1,}',
    '{"a" 1}',
    "{'a':1}",
    '{"a":01}',
    '{"a":1.}',
    '{"a":.5}',
    '{"a":-}',
    '{"a":1e}',
    '{"a":+1}',
    '{"a":NaN}',
    '{"a":tru}',
    '{"a":"\t"}',
    '{"a":"\\x"}',
    '{"a":"\\u12G4"}',
    '{"a":"unterminated}',
    '{"a":1} x',
    '{"a":1}{}',
    '{"events":[{"type":1 "timestamp":2}]}',
    `{"events":[${'['.repeat(5000)}]}`,
  ])('refuses what JSON.parse refuses: %s', (text) => agrees(text))

  test('agrees with JSON.parse on every body one edit away from a real one', () => {
    const body = JSON.stringify({
      sessionId: 'abc-123',
      events: [
        { type: 4, timestamp: 1_700_000_000_000, data: { href: 'https://shop.test/?q=a%20b' } },
        { type: 2, timestamp: 1_700_000_000_015, data: { node: { childNodes: [{ textContent: 'Caf\u00e9 "q" \\', id: 2 }], id: 1 } } },
        { type: 3, timestamp: 1_700_000_000_500, data: { positions: [{ x: -1.5e-3, ok: true, none: null }] } },
      ],
    })
    // Each character deleted, and each of these put before it and in its place.
    const edits = ['{', '}', '[', ']', ':', ',', '"', '\\', ' ', '-', '.', '0', '1', 'e', 't', 'n', 'u', '\u00e9', '\t', '\n']
    for (let i = 0; i < body.length; i++) {
      agrees(body.slice(0, i) + body.slice(i + 1))
      for (const c of edits) {
        agrees(body.slice(0, i) + c + body.slice(i))
        agrees(body.slice(0, i) + c + body.slice(i + 1))
      }
    }
  })

  test('keeps the offsets of at most `limit` items and counts the rest', () => {
    const result = scanReplayBody(bytes(JSON.stringify({ events: Array.from({ length: 10 }, (_, i) => ({ type: 3, timestamp: i, data: i })) })), 4)!
    expect(result.events!.count).toBe(10)
    expect(Array.from(result.events!.timestamp.subarray(0, 4))).toEqual([0, 1, 2, 3])
  })
})
