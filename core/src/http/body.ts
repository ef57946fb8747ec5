import { gunzipSync, inflateRawSync, inflateSync } from 'node:zlib'
import { Elysia } from 'elysia'
import { ApiError } from '../errors'
import { createBodyBudget, DEFAULT_BODY_MEMORY_BYTES, type BodyBudget } from './body-budget'
import { jsonBody, parseJson } from './json'

export interface BodyLimits {
  /** Every route but the large ones. */
  maxBodyBytes: number
  /** `/events` (replay chunks) and `/sourcemaps`. */
  maxUploadBodyBytes: number
  /** The bytes of bodies held at once, all routes together (body-budget.ts); DEFAULT_BODY_MEMORY_BYTES when not given. */
  maxBodyMemoryBytes?: number
}

const LARGE_BODY_PATHS = new Set(['/api/ingestion/events', '/api/ingestion/sourcemaps'])

/**
 * A route's own reader of its JSON body (replay chunks are stored as the bytes they came as, so their
 * route reads what it needs of them without parsing them whole, and decides when to do the work).
 * It throws an `ApiError` (`invalid_json`) for what is not JSON.
 */
export type BodyReader = (body: SentBody, request: Request) => Promise<unknown>

export interface SentBody {
  /** The bytes as sent, at most the route's limit (413 past it). */
  read(): Promise<Uint8Array>
  /** What `read` gave, inflated when it was sent compressed (with the same limit). */
  decode(sent: Uint8Array): Uint8Array
}

export const bodyLimitFor = (path: string, limits: BodyLimits): number =>
  LARGE_BODY_PATHS.has(path) ? limits.maxUploadBodyBytes : limits.maxBodyBytes

const tooLarge = (limit: number, what = 'body') => new ApiError('payload_too_large', `the ${what} is over the limit of ${limit} bytes`)

/**
 * Reads at most `limit` bytes: refused up front by Content-Length, or cut off while streaming. A body
 * sent without a Content-Length is charged to `budget` piece by piece as it arrives (one with it was
 * charged before anything else, see bodyParser).
 */
export async function readCapped(request: Request, limit: number, budget?: BodyBudget): Promise<Uint8Array> {
  const declared = request.headers.get('content-length')
  if (declared !== null) {
    if (Number(declared) > limit) throw tooLarge(limit)
    return new Uint8Array(await request.arrayBuffer())
  }
  if (!request.body) return new Uint8Array()
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const chunk of request.body) {
    size += chunk.byteLength
    if (size > limit) throw tooLarge(limit)
    budget?.charge(request, chunk.byteLength)
    chunks.push(chunk)
  }
  return Buffer.concat(chunks)
}

/**
 * The body's compression, from `Content-Encoding` or, for beacons that cannot set headers, `?compression=`.
 * The header is a list of the codings applied (RFC 9110 8.4): `identity` and empty members are no coding,
 * so "gzip, identity" is gzip; an empty header says nothing, and leaves the query to say it.
 */
export function compressionOf(contentEncoding: string | null, queryCompression: string | undefined): 'gzip' | 'deflate' | null {
  if (!contentEncoding && !queryCompression) return null // most bodies: nothing to split
  const codings = (codingsOf(contentEncoding) ?? codingsOf(queryCompression) ?? []).filter((coding) => coding !== 'identity')
  // Two codings (gzip inside deflate) are none a client of ours sends: refused as one unknown coding.
  const encoding = codings.join(', ')
  if (encoding === '') return null
  if (encoding === 'gzip' || encoding === 'x-gzip') return 'gzip'
  if (encoding === 'deflate') return 'deflate'
  // RFC 9110 §15.5.16: a 415 for a content coding says which ones would have been taken.
  throw new ApiError('unsupported_encoding', `unsupported content encoding "${encoding}"; use gzip or deflate`, { headers: { 'accept-encoding': 'gzip, deflate' } })
}

/** The codings a `Content-Encoding` value lists, lowercase; undefined when it lists none. */
function codingsOf(value: string | null | undefined): string[] | undefined {
  const codings = (value ?? '').split(',').map((coding) => coding.trim().toLowerCase()).filter(Boolean)
  return codings.length > 0 ? codings : undefined
}

/**
 * Inflates with the same cap as an uncompressed body, so a zip bomb costs at most `limit` bytes of
 * memory. `deflate` is zlib-wrapped by the standard, but some clients send it raw; both are accepted.
 */
export function inflate(bytes: Uint8Array, compression: 'gzip' | 'deflate', limit: number): Uint8Array {
  const options = { maxOutputLength: limit }
  try {
    if (compression === 'gzip') return gunzipSync(bytes, options)
    try {
      return inflateSync(bytes, options)
    } catch (error) {
      if (isOutputTooLarge(error)) throw error
      return inflateRawSync(bytes, options)
    }
  } catch (error) {
    if (isOutputTooLarge(error)) throw tooLarge(limit, 'inflated body')
    throw new ApiError('invalid_json', `the body is not valid ${compression} data`)
  }
}

const isOutputTooLarge = (error: unknown) =>
  error instanceof RangeError || (error as NodeJS.ErrnoException)?.code === 'ERR_BUFFER_TOO_LARGE'

/**
 * Multipart fields as a plain object; a repeated field becomes an array. Grown in place: copied at
 * each repeat, 80,000 fields of one name (4 MB) took 23 s. Collected in a Map, a field named
 * `__proto__` is a field like the others rather than the object's prototype.
 */
async function parseMultipart(bytes: Uint8Array, contentType: string): Promise<Record<string, unknown>> {
  let form: FormData
  try {
    form = await new Response(bytes as Uint8Array<ArrayBuffer>, { headers: { 'content-type': contentType } }).formData()
  } catch {
    throw new ApiError('validation_failed', 'the multipart body could not be read', { path: '/' })
  }
  const fields = new Map<string, unknown>()
  for (const [name, value] of form) {
    const previous = fields.get(name)
    if (previous === undefined) fields.set(name, value)
    else if (Array.isArray(previous)) previous.push(value)
    else fields.set(name, [previous, value])
  }
  return Object.fromEntries(fields)
}

/**
 * The size of each body read here that its Content-Length does not tell: inflated, or sent without
 * one (chunked). The writer bounds its queue by the bytes requests hold; counted as sent, a gzip body
 * that inflates a thousandfold would pass for a small one.
 */
const readSizes = new WeakMap<Request, number>()

/** The body's size as read (inflated), when it was not sent plainly with a Content-Length; else undefined. */
export const readBodyBytes = (request: Request): number | undefined => readSizes.get(request)

/** Media types are case-insensitive (RFC 9110, 8.3.1); a multipart boundary is not, so the header is kept as sent. */
const isMultipart = (contentType: string) => /^multipart\//i.test(contentType)
export const isMultipartForm = (contentType: string) => /^multipart\/form-data(?![^;\s])/i.test(contentType)

/**
 * Every body is JSON whatever its Content-Type (beacons send text/plain), except multipart uploads.
 * Size is checked before reading when Content-Length allows, and again after inflating. What bodies
 * hold at once is bounded by the body budget (body-budget.ts): charged while parsing, given back once
 * the request is done with its body, whatever its end.
 */
export function bodyParser(
  limits: BodyLimits,
  readers: Record<string, BodyReader> = {},
  budget: BodyBudget = createBodyBudget(limits.maxBodyMemoryBytes ?? DEFAULT_BODY_MEMORY_BYTES),
) {
  const parse = bodyParse(limits, readers, budget)
  // Given back as soon as the body is known to be done with: when it fails to parse, when its route
  // has answered, and when anything after the parse fails (a validation, a key refused, a handler),
  // by the error handler (errors.ts), which app.ts hands this budget. Not after the answer
  // (onAfterResponse), which would cover them all: Elysia runs that on the turn of the event loop
  // after each answer (about 2% of core's single events, measured without storage), and an
  // in-process caller's next request comes before it.
  return new Elysia({ name: 'http/body' })
    .onParse({ as: 'global' }, async ({ request, path, query }) => {
      try {
        return await parse(request, path, query)
      } catch (error) {
        budget.release(request)
        throw error
      }
    })
    .onAfterHandle({ as: 'global' }, ({ request }) => void budget.release(request))
}

function bodyParse(limits: BodyLimits, readers: Record<string, BodyReader>, budget: BodyBudget) {
  return async (request: Request, path: string, query: Record<string, string | undefined>): Promise<unknown> => {
    const limit = bodyLimitFor(path, limits)
    const contentType = request.headers.get('content-type') ?? ''
    const reader = Object.hasOwn(readers, path) ? readers[path] : undefined
    // A route with a reader of its own reads its body whatever its type, and checks what it checks
    // before anything of the body is looked at, its encoding included (a caller without the internal
    // secret gets 401, not 415).
    const codingOf = () => compressionOf(request.headers.get('content-encoding'), query.compression)
    const compression = reader ? undefined : codingOf()
    const declared = request.headers.get('content-length')
    // Charged first, before a route's reader checks its caller: from here the server receives the
    // body whether or not anything reads it yet, and a body waiting to be read holds as much.
    if (declared !== null && Number(declared) <= limit) budget.charge(request, Number(declared) || 0)

    // The hot path: a plain JSON body of known size is parsed natively, straight from the socket.
    if (compression === null && declared !== null && !isMultipart(contentType)) {
      if (Number(declared) > limit) throw tooLarge(limit)
      if (declared === '0') throw new ApiError('invalid_json', 'the body is empty; send a JSON object')
      let parsed: unknown
      try {
        parsed = await request.json()
      } catch {
        throw new ApiError('invalid_json', 'the body is not valid JSON')
      }
      return jsonBody(parsed, Number(declared))
    }

    const decode = (sent: Uint8Array) => {
      const coding = compression === undefined ? codingOf() : compression
      const bytes = coding ? inflate(sent, coding, limit) : sent
      // Inflated, a body holds its inflated bytes besides those it was charged for as sent.
      if (coding) budget.charge(request, bytes.byteLength)
      readSizes.set(request, (readSizes.get(request) ?? 0) + bytes.byteLength)
      return bytes
    }
    if (reader) return jsonBody(await reader({ read: () => readCapped(request, limit, budget), decode }, request))
    const bytes = decode(await readCapped(request, limit, budget))
    // Multipart fields keep their names: a file may be sent under any (parseMultipart).
    return isMultipartForm(contentType) ? parseMultipart(bytes, contentType) : parseJson(bytes)
  }
}
