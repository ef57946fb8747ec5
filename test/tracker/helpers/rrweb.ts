/**
 * rrweb's numbers for what the tests read in recorded events (rrweb's EventType and IncrementalSource,
 * which the tracker's bundle does not carry), and the shape they read. META and FULL_SNAPSHOT are the
 * tracker's own.
 */
export { FULL_SNAPSHOT, META } from '@sightline/tracker/replay'
export const INCREMENTAL = 3
export const CUSTOM = 5
/** Incremental sources. */
export const MUTATION = 0
export const MOUSE_INTERACTION = 2
/** Mouse interaction kinds. */
export const MOUSE_DOWN = 1
export const CLICK = 2

export type RecordedEvent = { type: number; timestamp: number; data: any }
