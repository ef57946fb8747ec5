import { t } from 'elysia'

/** Client-made ids (WIRE.md): 1-128 of [A-Za-z0-9._:-]. */
export const Id = t.String({ pattern: '^[A-Za-z0-9._:-]{1,128}$' })
/** `endUserId` may be absent or null. */
export const OptionalEndUserId = t.Optional(t.Union([Id, t.Null()]))
export const Uuid = t.String({ pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$' })
/** Epoch milliseconds from the client clock. */
export const EpochMs = t.Number({ minimum: 0, maximum: 1e14 })
/** A free-form JSON object; null is taken for "none" as fielded clients send it. */
export const Properties = t.Optional(t.Union([t.Record(t.String(), t.Unknown()), t.Null()]))
