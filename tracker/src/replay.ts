/** rrweb event types (rrweb's EventType) and the incremental sources a person causes (IncrementalSource). */
export const META = 4
export const CUSTOM = 5
const INCREMENTAL = 3
const USER_SOURCES = [1, 2, 3, 5, 6, 7, 12, 14] // mouse move, interaction, scroll, input, touch, media, drag, selection

export interface RecordedEvent {
  type: number
  timestamp: number
  data: unknown
}

/** Whether a person did this (DOM mutations and style changes happen on their own). */
export const isUserActivity = (event: RecordedEvent): boolean =>
  event.type === INCREMENTAL && USER_SOURCES.includes((event.data as { source?: number })?.source as number)

/** `addEvent` takes rrweb events as they are; anything else becomes an rrweb custom event. */
export function asRecordedEvent(event: unknown, now: number): RecordedEvent {
  const candidate = event as Partial<RecordedEvent> | null
  return typeof candidate?.type === 'number' && typeof candidate.timestamp === 'number' && 'data' in candidate
    ? (candidate as RecordedEvent)
    : { type: CUSTOM, timestamp: now, data: { tag: 'custom', payload: event } }
}
