import { describe, expect, test } from 'bun:test'
import { copyRow, jsonText, timestampText } from '@sightline/core/ingest/shared/copy'

/** COPY's text format read back as Postgres reads it: a row per line, tab-separated, `\N` for NULL. */
function readCopyText(text: string): (string | null)[][] {
  expect(text.endsWith('\n')).toBe(true)
  return text
    .slice(0, -1)
    .split('\n')
    .map((line) =>
      line.split('\t').map((field) => {
        if (field === '\\N') return null
        return field.replace(/\\(.)/g, (_, c: string) => {
          const unescaped = ({ '\\': '\\', t: '\t', n: '\n', r: '\r' } as Record<string, string>)[c]
          if (unescaped === undefined) throw new Error(`unexpected escape \\${c} in ${JSON.stringify(field)}`)
          return unescaped
        })
      }),
    )
}

describe('COPY text rows', () => {
  test('tab, newline, carriage return and backslash are escaped; NULL is \\N and an empty string stays empty', () => {
    expect(copyRow(['a\tb', 'one\ntwo', 'cr\rlf', 'C:\\dir', '', null])).toBe('a\\tb\tone\\ntwo\tcr\\rlf\tC:\\\\dir\t\t\\N\n')
  })

  test('values that look like markers are data: a line of \\. does not end the data, the text \\N is not NULL', () => {
    const text = copyRow(['\\.']) + copyRow(['\\N']) + copyRow(['\n\\.\n'])
    expect(text).toBe('\\\\.\n\\\\N\n\\n\\\\.\\n\n')
    expect(readCopyText(text)).toEqual([['\\.'], ['\\N'], ['\n\\.\n']])
  })

  test('quotes, accents, other scripts and emoji pass as they are', () => {
    const values = [`"double" 'single' \`back\``, 'ünïcødé', '日本語 العربية', '🎉👩‍💻', ';,|']
    expect(copyRow(values)).toBe(`${values.join('\t')}\n`)
  })

  test('NUL is dropped, as the insert path drops it (Postgres text cannot hold it)', () => {
    expect(copyRow(['a\0b\0', '\0'])).toBe('ab\t\n')
  })

  test('any text reads back as it was, whatever mix of special characters it holds', () => {
    const alphabet = ['\\', '\t', '\n', '\r', 'N', '.', 'a', ' ', 'é', '🎉', '"']
    let seed = 7
    const random = () => ((seed = (seed * 48271) % 2147483647) / 2147483647)
    const rows = Array.from({ length: 200 }, () =>
      Array.from({ length: 4 }, () => (random() < 0.1 ? null : Array.from({ length: Math.floor(random() * 12) }, () => alphabet[Math.floor(random() * alphabet.length)]).join(''))),
    )
    expect(readCopyText(rows.map(copyRow).join(''))).toEqual(rows)
  })
})

describe('COPY json values', () => {
  test('null and absent properties are NULL; an object is its JSON, escaped for COPY like any text', () => {
    expect(jsonText(null)).toBeNull()
    expect(jsonText(undefined)).toBeNull()
    const json = jsonText({ path: 'C:\\dir', line: 'a\nb', tab: '\t' })!
    expect(json).toBe('{"path":"C:\\\\dir","line":"a\\nb","tab":"\\t"}')
    expect(readCopyText(copyRow([json]))).toEqual([[json]])
  })

  test('as jsonParam: NUL escapes are removed and a lone surrogate becomes U+FFFD', () => {
    expect(jsonText({ a: 'x\u0000y', cut: 'ok \ud83d' })).toBe('{"a":"xy","cut":"ok \\ufffd"}')
  })
})

describe('COPY timestamps', () => {
  test('epoch milliseconds as UTC with microseconds', () => {
    expect(timestampText(0)).toBe('1970-01-01T00:00:00.000000Z')
    expect(timestampText(1_700_000_000_123)).toBe('2023-11-14T22:13:20.123000Z')
    expect(timestampText(946_684_800_000)).toBe('2000-01-01T00:00:00.000000Z')
  })

  test('fractions of a millisecond are rounded to the microsecond, as to_timestamp rounds them', () => {
    expect(timestampText(1_700_000_000_123.4567)).toBe('2023-11-14T22:13:20.123457Z')
    expect(timestampText(1_700_000_000_123.0004)).toBe('2023-11-14T22:13:20.123000Z')
    expect(timestampText(1_700_000_000_999.9999)).toBe('2023-11-14T22:13:21.000000Z')
  })

  test('times of one second, of the next, and of the first again are each their own', () => {
    const times = [1_700_000_000_001, 1_700_000_000_999, 1_700_000_001_000, 1_700_000_000_500, 1_699_999_999_999.999, 86_400_000 * 365 * 60]
    expect(times.map(timestampText)).toEqual([
      '2023-11-14T22:13:20.001000Z',
      '2023-11-14T22:13:20.999000Z',
      '2023-11-14T22:13:21.000000Z',
      '2023-11-14T22:13:20.500000Z',
      '2023-11-14T22:13:19.999999Z',
      '2029-12-17T00:00:00.000000Z',
    ])
    for (const ms of [0, 1, 999, 1000, 1_000_000_000_000, 4_102_444_800_000]) expect(timestampText(ms)).toBe(new Date(Math.round(ms)).toISOString().replace('Z', '000Z'))
  })
})
