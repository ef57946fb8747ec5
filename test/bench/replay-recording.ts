import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium } from 'playwright-core'
import { buildTracker } from '../../tracker/build'
import { SDK_VERSION } from '../../tracker/src/version'
import { replayChunkBodies, RECORDING_FILE, streamsOf, writeRecording, type ReplayRecording } from './lib/replay'
import { rng } from './lib/shop/catalogue'
import { startShopServer, type Redaction } from './lib/shop/server'
import { shop } from './lib/shop/shopper'
import { ensureDebianPackage, removeDir, run } from './lib/system'

/**
 * `npm run bench -- replay-recording [--sessions N] [--redaction privacy-first|visibility-first] [--out FILE]`:
 * records the replay benchmark's data. The tracker, built as `npm run build` builds it, records
 * scripted shoppers on the bench shop (`lib/shop/`) in headless Chromium (Debian's `chromium`,
 * installed when missing); every `/events` body it sends is kept and written to
 * `fixtures/shop-replay.json.zst`, which the core suite's P3 reads.
 */
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-quic', '--disable-sync']

function option(args: string[], name: string, fallback: string): string {
  const i = args.indexOf(`--${name}`)
  return i === -1 ? fallback : args[i + 1]
}

export async function main(args: string[]): Promise<void> {
  const sessions = Number(option(args, 'sessions', '6'))
  const redaction = option(args, 'redaction', 'privacy-first') as Redaction
  const out = option(args, 'out', RECORDING_FILE)
  if (!['privacy-first', 'visibility-first'].includes(redaction)) throw new Error('--redaction takes privacy-first or visibility-first')
  const log = (message: string) => console.error(`[recording] ${message}`)
  const executablePath = await ensureDebianPackage('chromium', 'chromium')
  const dir = mkdtempSync(join(tmpdir(), 'sightline-recording-'))
  try {
    log('building the tracker')
    await buildTracker(join(dir, 'tracker'))
    const server = await startShopServer({ trackerScript: join(dir, 'tracker', 't.js'), apiKey: 'sl_dev_benchrecording', redaction })
    const browser = await chromium.launch({ executablePath, args: ARGS })
    try {
      for (let i = 0; i < sessions; i++) {
        log(`shopper ${i + 1} of ${sessions}`)
        // A fresh context is a new visitor: a new session and end user for the tracker.
        const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, locale: 'en-GB', timezoneId: 'Europe/Berlin' })
        const page = await context.newPage()
        await shop(page, server.url, rng(1000 + i))
        // The tracker sends replay about every 3 s; wait for the last of it before the page goes.
        await page.waitForTimeout(4_000)
        await context.close()
      }
    } finally {
      await browser.close()
      server.stop()
    }
    const recording: ReplayRecording = {
      made: {
        by: 'npm run bench -- replay-recording',
        tracker: SDK_VERSION,
        redaction,
        browser: (await run([executablePath, '--version'])).trim(),
        sessions,
        date: new Date().toISOString().slice(0, 10),
      },
      bodies: server.replayBodies,
    }
    const json = JSON.stringify(recording.bodies.map((b) => b.events))
    const size = writeRecording(recording, out)
    const chunks = replayChunkBodies(recording, 'x')
    log(`${recording.bodies.length} bodies, ${streamsOf(recording).length} windows, ${(json.length / 1e6).toFixed(1)} MB of events, ${chunks.length} chunks of up to 1 MB`)
    log(`wrote ${out} (${(size / 1e3).toFixed(0)} KB)`)
  } finally {
    removeDir(dir)
  }
}
