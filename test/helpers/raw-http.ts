import type { Socket } from 'bun'

/** Sends raw bytes as one HTTP/1.1 request (no client-side normalization) and returns the answer's status, header fields (names lowercased) and body (latin1, byte for byte). */
export async function rawRequest(url: string, head: string): Promise<{ status: number; headers: Record<string, string>; text: string }> {
  const { hostname, port } = new URL(url)
  let received = ''
  await new Promise<void>((resolve, reject) => {
    Bun.connect({
      hostname,
      port: Number(port),
      socket: {
        open(socket: Socket) {
          socket.write(head)
        },
        data(_socket, chunk) {
          received += Buffer.from(chunk).toString('latin1')
        },
        close: () => resolve(),
        error: (_socket, error) => reject(error),
        connectError: (_socket, error) => reject(error),
      },
    })
  })
  const status = Number(received.match(/^HTTP\/1\.1 (\d{3})/)?.[1] ?? 0)
  const end = received.indexOf('\r\n\r\n')
  const fields = received.slice(0, end).split('\r\n').slice(1).map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()])
  return { status, headers: Object.fromEntries(fields), text: received.slice(end + 4) }
}
