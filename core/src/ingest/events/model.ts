import { t } from 'elysia'
import { EpochMs, Id, OptionalEndUserId, Properties, Uuid } from '../shared/model'

/** Any length: a long name is cut by the service (NAME_LIMIT_BYTES), never a reason to refuse a batch. */
const EventName = t.String({ minLength: 1 })

/** POST /customEvent (fielded). */
export const CustomEventBody = t.Object({
  sessionId: Id,
  eventName: EventName,
  eventProperties: Properties,
  endUserId: OptionalEndUserId,
  timestamp: t.Optional(EpochMs),
  uuid: t.Optional(Uuid),
})

/** POST /customEvent/batch (fielded). */
export const CustomEventBatchBody = t.Object({
  sessionId: Id,
  endUserId: OptionalEndUserId,
  events: t.Array(
    t.Object({
      eventName: EventName,
      eventProperties: Properties,
      timestamp: t.Optional(EpochMs),
      uuid: t.Optional(Uuid),
    }),
    { minItems: 1, maxItems: 1000 },
  ),
})

export type CustomEventBody = typeof CustomEventBody.static
export type CustomEventBatchBody = typeof CustomEventBatchBody.static
