import { record } from '@rrweb/record'
import type { Redaction } from './redaction'
import type { RecordedEvent } from './replay'

const META = 4 // rrweb's EventType.Meta, which precedes every full snapshot

/** A full snapshot every 10 minutes keeps long replays seekable. */
export const CHECKOUT_MS = 10 * 60 * 1000

export interface Recording {
  stop(): void
  /** A new full snapshot now (new session, changed redaction). */
  snapshot(): void
}

/**
 * rrweb recording with every text and input value passed through the redaction rules. Every input
 * type and every text node is offered to the mask functions, which decide per element; a meta event
 * always precedes a full snapshot, so that is where changed selectors take effect.
 */
export function startRecording(redaction: Redaction, emit: (event: RecordedEvent) => void): Recording {
  const mask = (text: string, el: HTMLElement | null) => (redaction.masked(el) ? text.replace(/\S/g, '*') : text)
  const stop = record({
    emit(event) {
      if (event.type === META) redaction.apply()
      emit(event as RecordedEvent)
    },
    maskAllInputs: true,
    maskTextSelector: '*',
    maskTextFn: mask,
    maskInputFn: mask,
    checkoutEveryNms: CHECKOUT_MS,
    recordCanvas: false,
    collectFonts: false,
  })
  return {
    stop: () => stop?.(),
    snapshot: () => record.takeFullSnapshot(true),
  }
}
