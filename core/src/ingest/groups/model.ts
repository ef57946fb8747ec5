import { t } from 'elysia'
import { Id, OptionalEndUserId, Properties, RequiredText } from '../shared/model'

const GroupText = RequiredText(256)

/** POST /groupidentify. A numeric `groupKey` (a company id) is taken as its decimal text. */
export const GroupIdentifyBody = t.Object({
  sessionId: t.Optional(t.Union([Id, t.Null()])),
  endUserId: OptionalEndUserId,
  groupType: GroupText,
  groupKey: t.Union([GroupText, t.Number()]),
  groupProperties: Properties,
})

export type GroupIdentifyBody = typeof GroupIdentifyBody.static
