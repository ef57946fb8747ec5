import { t } from 'elysia'
import { Id, OptionalEndUserId, Properties, RequiredText } from '../shared/model'

/** POST /user (fielded). `userId` is the tracker's current `endUserId`; `posthogName` and the like are ignored. */
export const IdentifyBody = t.Object({
  userId: OptionalEndUserId,
  userAttributes: Properties,
  sessionId: t.Optional(t.Union([Id, t.Null()])),
})

/** POST /user/auth (fielded): `authFields` name the attributes that identify a person across devices. */
export const AuthIdentifyBody = t.Object({
  ...IdentifyBody.properties,
  authFields: t.Array(RequiredText(128), { maxItems: 16 }),
})

export type IdentifyBody = typeof IdentifyBody.static
export type AuthIdentifyBody = typeof AuthIdentifyBody.static
