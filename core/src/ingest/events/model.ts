import { t } from 'elysia'
import { EpochMs, Id, Nullish, OptionalEndUserId, Properties } from '../shared/model'

/**
 * Any length: a long name is cut by the service (NAME_LIMIT_BYTES), never a reason to refuse a batch.
 * Not NUL alone, which is dropped before storing (RequiredText's rule).
 */
const EventName = t.String({ minLength: 1, pattern: '[^\\u0000]' })

/**
 * The client's id of the event. WIRE.md gives it no format: a UUID in practice, else any string up to
 * 128 characters (the service maps it to a UUID, see eventUuid); empty is taken as absent.
 */
const EventId = t.String({ maxLength: 128 })

/** POST /customEvent (fielded). */
export const CustomEventBody = t.Object({
  sessionId: Id,
  eventName: EventName,
  eventProperties: Properties,
  endUserId: OptionalEndUserId,
  timestamp: Nullish(EpochMs),
  uuid: Nullish(EventId),
})

/** POST /customEvent/batch (fielded). */
export const CustomEventBatchBody = t.Object({
  sessionId: Id,
  endUserId: OptionalEndUserId,
  events: t.Array(
    t.Object({
      eventName: EventName,
      eventProperties: Properties,
      timestamp: Nullish(EpochMs),
      uuid: Nullish(EventId),
    }),
    { minItems: 1, maxItems: 1000 },
  ),
})

export type CustomEventBody = typeof CustomEventBody.static
export type CustomEventBatchBody = typeof CustomEventBatchBody.static
