import { connectionOptions } from '../headers.ts'

/**
 * An incremental HTTP/1.1 response parser (RFC 9112) for the socket client: status line and
 * fields, then the body framed by Content-Length, chunked transfer coding, or the connection's end.
 * Pure: bytes in, parts out.
 */

export interface ParsedHead {
  status: number
  statusText: string
  headers: [string, string][]
  /** False for HEAD answers, 204 and 304 (RFC 9112 §6.3). */
  hasBody: boolean
  /**
   * The head can go on to the client as it came: HTTP/1.1, no field left out, and its body (if any)
   * framed by Content-Length. A server that writes HTTP/1.1 itself passes such an answer's bytes on.
   */
  passable: boolean
}

export interface PushResult {
  /** The head, on the push that completed it. */
  head: ParsedHead | null
  /** The whole body when it arrived with the head (the usual small answer): no stream needed. */
  complete: Uint8Array | null
  /**
   * With `complete`: the answer's bytes exactly as received, head and body, when this push holds
   * them from the head's first byte (no interim answer before it, nothing after it).
   */
  received: Uint8Array | null
  /** Body bytes for the streaming case, in order. */
  body: Uint8Array[]
  /** The answer is over. */
  done: boolean
  /** The connection may carry another request. */
  keepAlive: boolean
}

type State = 'head' | 'length' | 'chunk-size' | 'chunk-data' | 'chunk-end' | 'trailers' | 'close' | 'done'

const MAX_HEAD_BYTES = 64 * 1024
const HEAD_END = Buffer.from('\r\n\r\n')
const NOTHING = Buffer.alloc(0)
const LINE_END = Buffer.from('\r\n')

export class ResponseParser {
  /** `dropHeader` leaves fields out of the parsed head (they still decide framing and reuse). */
  constructor(private readonly dropHeader: (name: string, connectionNamed: Set<string> | null) => boolean = () => false) {}

  private state: State = 'head'
  private pending: Buffer | null = null
  private remaining = 0
  private keepAlive = true
  private any = false

  reset(): void {
    this.state = 'head'
    this.pending = null
    this.remaining = 0
    this.keepAlive = true
    this.any = false
  }

  /** Whether any byte of an answer arrived (a request on a dead kept-alive connection gets none). */
  receivedAny(): boolean {
    return this.any
  }

  /** Whether the body in progress is delimited by the connection closing (RFC 9112 §6.3, item 8). */
  endsAtClose(): boolean {
    return this.state === 'close'
  }

  push(chunk: Uint8Array, headRequest: boolean): PushResult {
    this.any = true
    let buffer = this.pending ? Buffer.concat([this.pending, chunk]) : Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
    this.pending = null
    const result: PushResult = { head: null, complete: null, received: null, body: [], done: false, keepAlive: false }
    const whole = buffer

    while (buffer.length > 0 || this.state === 'done') {
      if (this.state === 'head') {
        const end = buffer.indexOf(HEAD_END)
        if (end === -1) {
          if (buffer.length > MAX_HEAD_BYTES) throw new Error('response head too large')
          break
        }
        const head = this.parseHead(buffer.toString('latin1', 0, end), headRequest)
        const bodyStart = end + 4
        if (!head) {
          buffer = buffer.subarray(bodyStart)
          continue // an interim 1xx answer: the real one follows
        }
        result.head = head
        // The usual answer, all here: cut by offsets, each view made once (a view of a fresh
        // buffer is not free: it gives the buffer a backing store of its own).
        const bodyEnd = bodyStart + this.remaining
        if ((this.state as State) === 'length' && buffer.length >= bodyEnd) {
          result.complete = buffer.subarray(bodyStart, bodyEnd)
          // Only this answer's bytes: none of an interim answer before it, none past its end.
          if (buffer === whole) result.received = bodyEnd === buffer.length ? buffer : buffer.subarray(0, bodyEnd)
          buffer = bodyEnd === buffer.length ? NOTHING : buffer.subarray(bodyEnd)
          this.state = 'done'
        } else buffer = buffer.subarray(bodyStart)
      } else if (this.state === 'length') {
        const take = Math.min(this.remaining, buffer.length)
        result.body.push(buffer.subarray(0, take))
        buffer = buffer.subarray(take)
        this.remaining -= take
        if (this.remaining === 0) this.state = 'done'
      } else if (this.state === 'close') {
        result.body.push(buffer)
        buffer = buffer.subarray(buffer.length)
      } else if (this.state === 'chunk-data') {
        const take = Math.min(this.remaining, buffer.length)
        if (take > 0) result.body.push(buffer.subarray(0, take))
        buffer = buffer.subarray(take)
        this.remaining -= take
        if (this.remaining === 0) this.state = 'chunk-end'
      } else if (this.state === 'done') {
        result.done = true
        result.keepAlive = this.keepAlive && buffer.length === 0
        break
      } else {
        // chunk-size, chunk-end and trailers are lines.
        const end = buffer.indexOf(LINE_END)
        if (end === -1) {
          if (buffer.length > MAX_HEAD_BYTES) throw new Error('chunk framing too large')
          break
        }
        const line = buffer.toString('latin1', 0, end)
        buffer = buffer.subarray(end + 2)
        // A bare LF in a chunk extension or a trailer hides lines, as in the head (parseHead).
        if (BARE_CONTROL.test(line)) throw new Error('control character in the chunked framing')
        if (this.state === 'chunk-size') {
          // RFC 9112 §7.1: chunk-size is 1*HEXDIG (parseInt alone would take "0x5", "5zz", "-0").
          const digits = line.split(';', 1)[0].trim()
          const size = HEX_DIGITS.test(digits) ? Number.parseInt(digits, 16) : NaN
          if (!Number.isSafeInteger(size)) throw new Error('bad chunk size')
          this.remaining = size
          this.state = size === 0 ? 'trailers' : 'chunk-data'
        } else if (this.state === 'chunk-end') {
          if (line !== '') throw new Error('chunk not followed by CRLF')
          this.state = 'chunk-size'
        } else if (line === '') {
          this.state = 'done'
        }
      }
    }
    if (buffer.length > 0 && !result.done) this.pending = Buffer.from(buffer)
    return result
  }

  /**
   * Parses the status line and fields; null for an interim (1xx) answer. Sets the body framing.
   * Index arithmetic rather than split: this runs once per request.
   */
  private parseHead(text: string, headRequest: boolean): ParsedHead | null {
    // RFC 9112 §2.2, §4 and §5.5: lines end in CRLF and hold no other control but HTAB. A bare LF is a
    // line end to a parser that allows it (§2.2 does): a reason phrase, an interim answer or a field
    // the relay drops unread (Set-Cookie, Keep-Alive) could hide fields and a whole answer of their
    // own, and the relay passed on the body of the answer written after it as this one's.
    if (BARE_CONTROL.test(text)) throw new Error('control character in the head')
    // "HTTP/1.1 200 OK"
    const status = threeDigits(text, 9)
    if (!text.startsWith('HTTP/1.') || (text[7] !== '0' && text[7] !== '1') || text[8] !== ' ' || status === -1) throw new Error('bad status line')
    if (status < 200) {
      if (status === 101) throw new Error('unexpected protocol switch')
      return null
    }
    let lineEnd = text.indexOf('\r\n')
    if (lineEnd === -1) lineEnd = text.length
    if (lineEnd > 12 && text[12] !== ' ') throw new Error('bad status line')
    const statusText = text.slice(13, lineEnd)

    let headers: [string, string][] = []
    // Every Connection and Transfer-Encoding field line, joined as one list (RFC 9110 §5.3): a
    // field repeated counts whole, not only its last line.
    let connection: string | null = null
    let transferEncoding: string | null = null
    let length: number | null = null
    let dropped = false
    for (let at = lineEnd + 2; at < text.length; ) {
      let end = text.indexOf('\r\n', at)
      if (end === -1) end = text.length
      const colon = text.indexOf(':', at)
      // RFC 9112 §5.1: no whitespace between the field name and the colon.
      if (colon <= at || colon > end || isSpace(text.charCodeAt(colon - 1))) throw new Error('bad header line')
      const name = text.slice(at, colon).toLowerCase()
      let from = colon + 1
      let to = end
      while (from < to && isSpace(text.charCodeAt(from))) from++
      while (to > from && isSpace(text.charCodeAt(to - 1))) to--
      const value = text.slice(from, to)
      at = end + 2
      if (name === 'content-length') {
        // RFC 9110 §8.6: 1*DIGIT (Number() would also take "0x10", "1e3", "+5").
        const n = DIGITS.test(value) ? Number(value) : NaN
        if (!Number.isSafeInteger(n) || (length !== null && length !== n)) throw new Error('bad content-length')
        length = n
      } else if (name === 'transfer-encoding') {
        transferEncoding = transferEncoding === null ? value : `${transferEncoding}, ${value}`
      } else if (name === 'connection') {
        connection = connection === null ? value : `${connection}, ${value}`
      }
      if (!this.dropHeader(name, null)) headers.push([name, value])
      else dropped = true
    }
    const connectionNamed = connectionOptions(connection)
    if (connectionNamed) {
      headers = headers.filter(([name]) => !this.dropHeader(name, connectionNamed))
      dropped = true
    }
    // RFC 9112 §9.3: HTTP/1.1 persists unless "close" is an option; HTTP/1.0 only with "keep-alive".
    const options = connection === null ? null : connection.toLowerCase().split(',').map((token) => token.trim())
    let close = options === null ? text[7] === '0' : options.includes('close') || (text[7] === '0' && !options.includes('keep-alive'))
    // RFC 9112 §6.1 and §6.3: Transfer-Encoding overrides Content-Length, which an intermediary removes
    // before passing the answer on. Only `chunked`, once, is taken: the field is hop-by-hop and the
    // relay decodes no other coding, so a body under `gzip, chunked` (or `gzip` to the close) reached
    // the client as compressed bytes with nothing saying so. Refused (502) like any answer that
    // cannot be read. With a Content-Length too, or in HTTP/1.0 (which has no chunked coding), the
    // framing is in doubt (RFC 9112 §6.3: "ought to be handled as an error"; a hop between the relay
    // and core may have framed it by the length): the answer goes on, the connection is not reused.
    const chunked = transferEncoding !== null
    if (chunked) {
      if (transferEncoding!.trim().toLowerCase() !== 'chunked') throw new Error('unsupported transfer coding')
      if (length !== null || text[7] === '0') close = true
      if (length !== null) headers = headers.filter(([name]) => name !== 'content-length')
      length = null
    }
    this.keepAlive = !close
    const hasBody = !headRequest && status !== 204 && status !== 304
    if (!hasBody) this.state = 'done'
    else if (chunked) this.state = 'chunk-size'
    else if (length !== null) {
      this.remaining = length
      this.state = 'length'
    } else {
      this.state = 'close'
      this.keepAlive = false
    }
    return { status, statusText, headers, hasBody, passable: !dropped && text[7] === '1' && !chunked && (length !== null || !hasBody) }
  }
}

const isSpace = (code: number) => code === 32 || code === 9
const DIGITS = /^\d+$/
/** A control other than HTAB, or a CR or LF that is not part of a CRLF. */
const BARE_CONTROL = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]|\r(?!\n)|(?<!\r)\n/
const HEX_DIGITS = /^[0-9A-Fa-f]+$/

/** The number written by the three digits at `at`, or -1. */
function threeDigits(text: string, at: number): number {
  let value = 0
  for (let i = at; i < at + 3; i++) {
    const digit = text.charCodeAt(i) - 48
    if (!(digit >= 0 && digit <= 9)) return -1
    value = value * 10 + digit
  }
  return value
}
