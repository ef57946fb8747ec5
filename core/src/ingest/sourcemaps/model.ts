import { t } from 'elysia'

/** A file's name, in either form: (release, name) is the stored map's key. */
export const FILE_NAME_MAX_CHARS = 1024

export const Release = t.String({ minLength: 1, maxLength: 256, pattern: '^[^\\u0000-\\u001f]+$' })

/** POST /sourcemaps, JSON form; `content` is the source map, as JSON text or as the object itself. */
export const SourceMapJsonBody = t.Object({
  release: Release,
  files: t.Array(
    t.Object({
      name: t.String({ minLength: 1, maxLength: FILE_NAME_MAX_CHARS }),
      url: t.Optional(t.Union([t.String({ minLength: 1, maxLength: 2048 }), t.Null()])),
      content: t.Union([t.String(), t.Record(t.String(), t.Unknown())]),
    }),
    { minItems: 1, maxItems: 500 },
  ),
})

/** POST /sourcemaps, multipart form: `release` plus the files; other fields are ignored. */
export const SourceMapFormBody = t.Object({ release: Release })

export type SourceMapJsonBody = typeof SourceMapJsonBody.static
