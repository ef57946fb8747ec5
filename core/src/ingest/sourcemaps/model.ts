import { t } from 'elysia'

export const Release = t.String({ minLength: 1, maxLength: 256, pattern: '^[^\\u0000-\\u001f]+$' })

/** POST /sourcemaps, JSON form; `content` is the source map, as JSON text or as the object itself. */
export const SourceMapJsonBody = t.Object({
  release: Release,
  files: t.Array(
    t.Object({
      name: t.String({ minLength: 1, maxLength: 1024 }),
      url: t.Optional(t.Union([t.String({ minLength: 1, maxLength: 2048 }), t.Null()])),
      content: t.Union([t.String(), t.Record(t.String(), t.Unknown())]),
    }),
    { minItems: 1, maxItems: 500 },
  ),
})

/** POST /sourcemaps, multipart form: `release` plus the files; other fields are ignored. */
export const SourceMapFormBody = t.Object({ release: Release })

export type SourceMapJsonBody = typeof SourceMapJsonBody.static
