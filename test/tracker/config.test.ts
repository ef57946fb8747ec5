import { describe, expect, test } from 'bun:test'
import { resolveIngestionBase } from '@sightline/tracker/config'

const pageUrl = 'https://shop.example/products/42?ref=mail'

describe('where the tracker sends', () => {
  test('an explicit ingestionUrl wins over everything', () => {
    expect(resolveIngestionBase('https://sightline.example.com/', 'https://shop.example/_sl/t.js', '/_meta', pageUrl)).toEqual({
      base: 'https://sightline.example.com',
      source: 'option',
    })
    expect(resolveIngestionBase('/_x', undefined, undefined, pageUrl).base).toBe('https://shop.example/_x')
  })

  test('a script loaded from <origin><prefix>/t.js names the relay: <origin><prefix>', () => {
    const from = (scriptUrl: string) => resolveIngestionBase(undefined, scriptUrl, '/_meta', pageUrl)
    expect(from('https://shop.example/_sl/t.js')).toEqual({ base: 'https://shop.example/_sl', source: 'script' })
    expect(from('https://shop.example/a/b/t.js?v=3#x').base).toBe('https://shop.example/a/b')
    expect(from('https://cdn.shop.example/track/t.js').base).toBe('https://cdn.shop.example/track')
    expect(from('https://shop.example/t.js').base).toBe('https://shop.example')
    expect(from('/_sl/t.js').base).toBe('https://shop.example/_sl')
  })

  test('a script of another name says nothing; the meta tag is next', () => {
    for (const scriptUrl of ['https://shop.example/assets/app.js', 'https://shop.example/_sl/t.json', 'https://shop.example/_sl/at.js']) {
      expect(resolveIngestionBase(undefined, scriptUrl, 'https://in.example/base/', pageUrl)).toEqual({ base: 'https://in.example/base', source: 'meta' })
    }
    expect(resolveIngestionBase(undefined, null, '/_relay', pageUrl)).toEqual({ base: 'https://shop.example/_relay', source: 'meta' })
  })

  test("a relay script renamed (the relay's script name) is not guessed at: the meta tag says where the relay is", () => {
    // A script of any name could be a CDN's or the site's static folder, which no base may become.
    expect(resolveIngestionBase(undefined, 'https://shop.example/metrics/sl.js', undefined, pageUrl)).toEqual({ base: 'https://shop.example/_sl', source: 'default' })
    expect(resolveIngestionBase(undefined, 'https://shop.example/metrics/sl.js', '/metrics', pageUrl)).toEqual({ base: 'https://shop.example/metrics', source: 'meta' })
  })

  test('nothing said: the page origin under the relay prefix /_sl', () => {
    expect(resolveIngestionBase(undefined, undefined, undefined, pageUrl)).toEqual({ base: 'https://shop.example/_sl', source: 'default' })
    expect(resolveIngestionBase(undefined, '', '', 'http://localhost:3000/')).toEqual({ base: 'http://localhost:3000/_sl', source: 'default' })
  })

  test('a query or fragment of the ingestionUrl or the meta tag is no part of the base: the paths go before it, never after', () => {
    expect(resolveIngestionBase('https://sightline.example.com/?v=2', undefined, undefined, pageUrl).base).toBe('https://sightline.example.com')
    expect(resolveIngestionBase('/_sl/?v=2#top', undefined, undefined, pageUrl).base).toBe('https://shop.example/_sl')
    expect(resolveIngestionBase('https://in.example/base#x', undefined, undefined, pageUrl).base).toBe('https://in.example/base')
    expect(resolveIngestionBase(undefined, null, '/metrics?cache=no', pageUrl)).toEqual({ base: 'https://shop.example/metrics', source: 'meta' })
  })
})
