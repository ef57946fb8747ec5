import { Elysia } from 'elysia'
import { ApiError } from '../../errors'
import { isMultipartForm } from '../../http/body'
import type { Writer } from '../../writer'
import { validator } from '../shared/validate'
import { commit } from '../shared/write'
import type { IngestionPlugin } from '../plugin'
import { FILE_NAME_MAX_CHARS, SourceMapFormBody, SourceMapJsonBody } from './model'
import { sourceMapUploads, type UploadedFile } from './service'
import { sourceMapRows, sourceMapsSink } from './store'

const checkJsonForm = validator(SourceMapJsonBody)
const checkForm = validator(SourceMapFormBody)

/** The release and files of either form of upload. */
async function uploadOf(body: unknown, contentType: string): Promise<{ release: string; files: UploadedFile[] }> {
  if (!isMultipartForm(contentType)) {
    const { release, files } = checkJsonForm(body)
    return { release, files: files.map((file, i) => ({ ...file, path: `/files/${i}/content` })) }
  }
  // The body parser gives multipart as a plain object of fields; every file field is a map or a script.
  const fields = body as Record<string, unknown>
  const { release } = checkForm({ release: fields.release })
  const files: UploadedFile[] = []
  for (const [field, value] of Object.entries(fields)) {
    for (const part of Array.isArray(value) ? value : [value]) {
      if (!(part instanceof Blob)) continue
      const name = part instanceof File && part.name && part.name !== 'blob' ? part.name : field
      if (name.length > FILE_NAME_MAX_CHARS) throw new ApiError('validation_failed', `/${field}: a file name is at most ${FILE_NAME_MAX_CHARS} characters`, { path: `/${field}` })
      files.push({ name, content: await part.text(), path: `/${field}` })
    }
  }
  return { release, files }
}

export function sourceMapRoutes({ ingestion, writer }: { ingestion: IngestionPlugin; writer: Writer }) {
  return new Elysia({ prefix: '/api/ingestion' }).use(ingestion).post('/sourcemaps', async ({ body, caller, reply, request }) => {
    const { release, files } = await uploadOf(body, request.headers.get('content-type') ?? '')
    const uploads = sourceMapUploads(files)
    // Uploads are the operator's build artifacts, not traffic: nothing counts against the monthly limit.
    await commit(writer, caller, request, 0, [{ sink: sourceMapsSink, rows: await sourceMapRows(caller.projectId, release, uploads) }])
    // A name given twice is stored once, the later file (as a later upload's would replace it), and named once.
    return reply({ stored: [...new Set(uploads.map((upload) => upload.name))] })
  })
}
