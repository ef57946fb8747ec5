/** rrweb's EventType.Custom: what `addEvent` makes of anything that is not an rrweb event. */
const CUSTOM = 5
/** rrweb's EventType.Meta, which precedes every full snapshot, and EventType.FullSnapshot. */
export const META = 4
export const FULL_SNAPSHOT = 2

export interface RecordedEvent {
  type: number
  timestamp: number
  data: unknown
}

/**
 * `addEvent` takes rrweb events as they are; anything else becomes an rrweb custom event (typed as
 * the rrweb event it may be: `addEvent` passes whatever the page gave it).
 */
export function asRecordedEvent(event: Partial<RecordedEvent> | null, now: number): RecordedEvent {
  return typeof event?.type === 'number' && typeof event.timestamp === 'number' && 'data' in event
    ? (event as RecordedEvent)
    : { type: CUSTOM, timestamp: now, data: { tag: 'custom', payload: event } }
}
