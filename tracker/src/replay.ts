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

/** `addEvent` takes rrweb events as they are; anything else becomes an rrweb custom event. */
export function asRecordedEvent(event: unknown, now: number): RecordedEvent {
  const candidate = event as Partial<RecordedEvent> | null
  return typeof candidate?.type === 'number' && typeof candidate.timestamp === 'number' && 'data' in candidate
    ? (candidate as RecordedEvent)
    : { type: CUSTOM, timestamp: now, data: { tag: 'custom', payload: event } }
}
