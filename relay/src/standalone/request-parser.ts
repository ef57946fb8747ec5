import type { HeaderList } from '../headers.ts'

/**
 * The request side of the standalone server (RFC 9112): the head of a client's request and the
 * chunked body after it. Strict on purpose: the relay sits in front of other servers, and any
 * framing it reads one way and a hop behind it reads another is a smuggled request. What is in
 * doubt is refused, never repaired. Pure: bytes in, parts out.
 */

export interface RequestHead {
  method: string // as sent (a case-sensitive token)
  target: string // the request-target exactly as sent
  http10: boolean // HTTP/1.0 (else HTTP/1.1)
  /** Lower-case names in arrival order; a repeated field appears once, its values joined with ", " (as the Fetch `Headers` class does), at the position of its first line. */
  headers: HeaderList
  host: string | null // null when absent
  contentLength: number | null
  chunked: boolean
  /** RFC 9112 §9.3: 1.1 persists unless Connection has "close"; 1.0 only with "keep-alive". */
  keepAlive: boolean
  /** Expect: 100-continue (case-insensitive) was sent. */
  expectContinue: boolean
}

/** A request that cannot be served, with the status to answer it (the connection is then closed). */
export class RequestError extends Error {
  constructor(readonly status: 400 | 417 | 431 | 501 | 505, message: string) {
    super(message)
  }
}

export const MAX_HEAD_BYTES = 16 * 1024
export const MAX_FIELDS = 100
const MAX_SIZE_LINE = 4096 // the chunk-size line with its extensions: the data may be long, never its framing
const MAX_SIZE_DIGITS = 12 // 2^48 - 1 stays a safe integer

const HEAD_END = Buffer.from('\r\n\r\n')
const bad = (message: string) => new RequestError(400, message)

/**
 * The head at the start of `buffer` (after any empty lines before the request line, RFC 9112 §2.2,
 * which are skipped), or null while its end (CRLF CRLF) has not arrived. `bytes` is how many bytes
 * of buffer the head (with the skipped empty lines) took. Throws RequestError for anything
 * malformed, and 431 when MAX_HEAD_BYTES pass without a complete head or more than MAX_FIELDS
 * field lines.
 */
export function parseRequestHead(buffer: Uint8Array): { head: RequestHead; bytes: number } | null {
  const data = asBuffer(buffer)
  let start = 0
  while (data[start] === 13 && data[start + 1] === 10) start += 2
  // The skipped lines are bounded too, or a client could make the relay hold them forever.
  if (start > MAX_HEAD_BYTES) throw new RequestError(431, 'request head too large')
  const end = data.indexOf(HEAD_END, start)
  if (end === -1) {
    if (data.length - start >= MAX_HEAD_BYTES) throw new RequestError(431, 'request head too large')
    // Refused now, not after 16 KiB: what cannot start a method (a TLS hello), and a bare LF (a
    // client ending lines with LF alone never sends the CRLF CRLF waited for).
    if (start < data.length && data[start] !== 13 && !isTchar(data[start])) throw bad('bad request line')
    for (let lf = data.indexOf(10, start); lf !== -1; lf = data.indexOf(10, lf + 1)) if (data[lf - 1] !== 13) throw bad('bare LF in the head')
    return null
  }
  if (end + 4 - start > MAX_HEAD_BYTES) throw new RequestError(431, 'request head too large')
  // latin1: one char per byte, so obs-text (0x80-0xff) in values survives and indexes stay byte offsets.
  const text = data.toString('latin1', start, end)
  return { head: parseHeadText(text), bytes: end + 4 }
}

/** The head without its final CRLF CRLF. Every char of it is checked by one line rule or another. */
function parseHeadText(text: string): RequestHead {
  // RFC 9112 §3: method SP request-target SP HTTP-version, single spaces (not the whitespace
  // §3 lets a recipient split on: a hop that does sees another target than one that does not).
  let lineEnd = text.indexOf('\r\n')
  if (lineEnd === -1) lineEnd = text.length
  const sp1 = text.indexOf(' ')
  if (sp1 <= 0 || sp1 > lineEnd) throw bad('bad request line')
  for (let i = 0; i < sp1; i++) if (!isTchar(text.charCodeAt(i))) throw bad('bad method')
  const sp2 = text.indexOf(' ', sp1 + 1)
  if (sp2 === -1 || sp2 > lineEnd || sp2 === sp1 + 1) throw bad('bad request line')
  // RFC 9112 §3.2: the target is visible ASCII; a control or a raw byte >= 0x80 is read
  // differently by each hop that "fixes" it.
  for (let i = sp1 + 1, code; i < sp2; i++) if ((code = text.charCodeAt(i)) <= 0x20 || code >= 0x7f) throw bad('bad request target')
  const http10 = version(text, sp2 + 1, lineEnd)

  // One native pass lower-cases every name (a toLowerCase per name costs more than the rest of the
  // parse); latin1 lower-cases char for char, so its indexes are the text's.
  const lower = text.toLowerCase()
  const headers: HeaderList = []
  let host: string | null = null
  let hosts = 0
  let contentLength: number | null = null
  let transferEncoding: string | null = null
  let connection: string | null = null
  let expect: string | null = null
  let fields = 0
  for (let at = lineEnd + 2; at < text.length; ) {
    let end = text.indexOf('\r', at)
    if (end === -1) end = text.length
    else if (text.charCodeAt(end + 1) !== 10) throw bad('bare CR in the head')
    if (++fields > MAX_FIELDS) throw new RequestError(431, 'too many header fields')
    const colon = fieldName(text, at, end)
    const name = lower.slice(at, colon)
    const value = fieldValue(text, colon + 1, end)
    at = end + 2
    // Repeated lines of a list field count whole, joined (RFC 9110 §5.3), not only the last.
    if (name === 'host') {
      // RFC 9112 §3.2: more than one Host line leaves the target's authority in doubt.
      if (++hosts > 1) throw bad('more than one Host')
      host = value
    } else if (name === 'content-length') contentLength = lengthOf(value, contentLength)
    else if (name === 'transfer-encoding') transferEncoding = transferEncoding === null ? value : `${transferEncoding}, ${value}`
    else if (name === 'connection') connection = connection === null ? value : `${connection}, ${value}`
    else if (name === 'expect') expect = expect === null ? value : `${expect}, ${value}`
    // The list handed on: a repeated name once, its values joined, as the Fetch `Headers` class does.
    let k = 0
    while (k < headers.length && headers[k][0] !== name) k++
    if (k < headers.length) headers[k][1] = `${headers[k][1]}, ${value}`
    else headers.push([name, value])
  }
  if (!http10 && hosts === 0) throw bad('no Host') // RFC 9112 §3.2

  // RFC 9112 §6.1: HTTP/1.0 has no chunked coding, so its Transfer-Encoding frames nothing a hop
  // agrees on; with Content-Length too, one hop reads one length and the next another (§6.1 lets a
  // server refuse it; one in front of others does). Any coding but a lone `chunked` is one the relay cannot
  // decode to find the body's end: 501 (RFC 9112 §6.1).
  const chunked = transferEncoding !== null
  if (chunked) {
    if (http10) throw bad('Transfer-Encoding in HTTP/1.0')
    if (contentLength !== null) throw bad('both Transfer-Encoding and Content-Length')
    if (transferEncoding!.trim().toLowerCase() !== 'chunked') throw new RequestError(501, 'unsupported transfer coding')
  }
  // RFC 9110 §10.1.1: the only expectation there is; any other cannot be met.
  if (expect !== null && expect.toLowerCase() !== '100-continue') throw new RequestError(417, 'unsupported expectation')

  // RFC 9112 §9.3: HTTP/1.1 persists unless "close" is an option; HTTP/1.0 only with "keep-alive".
  const options = connection === null ? [] : connection.toLowerCase().split(',').map((token) => token.trim())
  const keepAlive = !options.includes('close') && (!http10 || options.includes('keep-alive'))
  return { method: text.slice(0, sp1), target: text.slice(sp1 + 1, sp2), http10, headers, host, contentLength, chunked, keepAlive, expectContinue: expect !== null }
}

/** RFC 9112 §2.3: HTTP-version = "HTTP/" DIGIT "." DIGIT. True for 1.0; 505 for a well-formed other. */
function version(text: string, from: number, to: number): boolean {
  const major = text.charCodeAt(from + 5)
  const minor = text.charCodeAt(from + 7)
  if (to - from !== 8 || !text.startsWith('HTTP/', from) || text.charCodeAt(from + 6) !== 46 || !isDigit(major) || !isDigit(minor)) throw bad('bad HTTP version')
  if (major !== 49 || (minor !== 48 && minor !== 49)) throw new RequestError(505, 'unsupported HTTP version')
  return minor === 48
}

/**
 * The index of the colon ending the field name of the line between at and end. RFC 9112 §5.1: no
 * whitespace before the colon (a hop that trims it sees another field name); §5.2: no obs-fold (a
 * hop that unfolds it sees another value).
 */
function fieldName(text: string, at: number, end: number): number {
  let i = at
  while (i < end && isTchar(text.charCodeAt(i))) i++
  if (i === at || i === end || text.charCodeAt(i) !== 58) throw bad(isSpace(text.charCodeAt(at)) ? 'obsolete line folding' : 'bad header line')
  return i
}

/**
 * The value between from and to without its OWS. RFC 9110 §5.5: no control but HTAB; a CR or LF
 * left in a line is a bare one, which another hop may take for a line end and find a field hidden.
 */
function fieldValue(text: string, from: number, to: number): string {
  while (from < to && isSpace(text.charCodeAt(from))) from++
  while (to > from && isSpace(text.charCodeAt(to - 1))) to--
  const value = text.slice(from, to)
  if (CONTROL.test(value)) throw bad('control character in a field value')
  return value
}

/** RFC 9110 §8.6: a list of 1*DIGIT (a hop may have joined lines), all the same number. */
function lengthOf(value: string, known: number | null): number {
  let length = known
  for (const item of value.split(',')) {
    // Number() alone would also take "", "0x10", "1e3", "+5".
    const digits = item.trim()
    const n = DIGITS.test(digits) ? Number(digits) : NaN
    if (!Number.isSafeInteger(n) || (length !== null && length !== n)) throw bad('bad Content-Length')
    length = n
  }
  return length!
}

type State = 'size' | 'data' | 'cr' | 'lf' | 'trailers' | 'done'

/** Incremental decoder of the chunked transfer coding (RFC 9112 §7.1). */
export class ChunkedDecoder {
  private state: State = 'size'
  private remaining = 0
  /** A line split between pushes (a size line or a trailer field): copied parts, joined once it ends (not per push, which is quadratic when a client trickles bytes). */
  private pending: Buffer[] = []
  private pendingBytes = 0
  private trailerBytes = 0

  /** Decoded data of `chunk` in order; `done` once the last chunk and trailer section ended; `rest` = bytes after the end (the next pipelined request), else null. Throws RequestError(400) on malformed framing. */
  push(chunk: Uint8Array): { pieces: Uint8Array[]; done: boolean; rest: Uint8Array | null } {
    const data = asBuffer(chunk)
    const pieces: Uint8Array[] = []
    let at = 0
    while (at < data.length && this.state !== 'done') {
      if (this.state === 'data') {
        // The data itself: views of the input, never copied.
        const take = Math.min(this.remaining, data.length - at)
        pieces.push(data.subarray(at, at + take))
        at += take
        this.remaining -= take
        if (this.remaining === 0) this.state = 'cr'
      } else if (this.state === 'cr' || this.state === 'lf') {
        // RFC 9112 §7.1: exactly CRLF after the data; anything else means the size lied.
        if (data[at++] !== (this.state === 'cr' ? 13 : 10)) throw bad('chunk data not followed by CRLF')
        this.state = this.state === 'cr' ? 'lf' : 'size'
      } else {
        const lf = data.indexOf(10, at)
        const limit = this.state === 'size' ? MAX_SIZE_LINE + 2 : MAX_HEAD_BYTES - this.trailerBytes
        const part = data.subarray(at, lf === -1 ? data.length : lf + 1)
        at += part.length
        // A complete line may be `limit` bytes; an incomplete one must leave room for its LF.
        const length = this.pendingBytes + part.length
        if (length > limit || (lf === -1 && length >= limit)) throw bad('chunk framing too large')
        if (lf === -1) {
          this.pending.push(Buffer.from(part))
          this.pendingBytes = length
          break
        }
        const line = this.pendingBytes > 0 ? Buffer.concat([...this.pending, part]) : part
        this.pending = []
        this.pendingBytes = 0
        // Lines end in CRLF only (RFC 9112 §2.2), as in the head.
        if (line.length < 2 || line[line.length - 2] !== 13) throw bad('bare LF in the chunked framing')
        if (this.state === 'size') this.sizeLine(line, line.length - 2)
        else this.trailerLine(line)
      }
    }
    const done = this.state === 'done'
    return { pieces, done, rest: done && at < data.length ? data.subarray(at) : null }
  }

  /** RFC 9112 §7.1: chunk-size [BWS ";" chunk-ext], the extensions read past and ignored. */
  private sizeLine(line: Uint8Array, end: number): void {
    let i = 0
    let size = 0
    for (let digit = 0; i < end && (digit = hexValue(line[i])) !== -1; i++) size = size * 16 + digit
    if (i === 0 || i > MAX_SIZE_DIGITS) throw bad('bad chunk size')
    // BWS only before a ";": "5 " alone is no chunk-size.
    const digits = i
    while (i < end && isSpace(line[i])) i++
    if (i < end ? line[i] !== 59 : i !== digits) throw bad('bad chunk size')
    for (; i < end; i++) if ((line[i] < 0x20 && line[i] !== 9) || line[i] === 0x7f) throw bad('control character in a chunk extension')
    this.remaining = size
    this.state = size === 0 ? 'trailers' : 'data'
  }

  /** RFC 9112 §7.1.2: trailer fields are checked as header lines and dropped; an empty line ends the body. */
  private trailerLine(line: Buffer): void {
    this.trailerBytes += line.length
    if (line.length === 2) {
      this.state = 'done'
    } else {
      const text = line.toString('latin1', 0, line.length - 2)
      fieldValue(text, fieldName(text, 0, text.length) + 1, text.length)
    }
  }
}

const asBuffer = (bytes: Uint8Array): Buffer => (Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength))
const isSpace = (code: number) => code === 32 || code === 9
const isDigit = (code: number) => code >= 48 && code <= 57
const DIGITS = /^\d+$/
/** A control other than HTAB (CR and LF included: one left inside a line is a bare one). */
const CONTROL = /[\x00-\x08\x0a-\x1f\x7f]/

function hexValue(code: number): number {
  if (code >= 48 && code <= 57) return code - 48
  const lower = code | 0x20
  return lower >= 97 && lower <= 102 ? lower - 87 : -1
}

/** RFC 9110 §5.6.2: tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA */
const TCHAR = new Uint8Array(128)
for (const c of "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") TCHAR[c.charCodeAt(0)] = 1
const isTchar = (code: number) => code < 128 && TCHAR[code] === 1
