import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** Runs a command, throwing with its output when it fails. */
export async function run(cmd: string[], options: { env?: Record<string, string>; quiet?: boolean } = {}): Promise<string> {
  const proc = Bun.spawn(cmd, { env: { ...process.env, ...options.env }, stdout: 'pipe', stderr: 'pipe' })
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  if (code !== 0) throw new Error(`${cmd.join(' ')} exited ${code}:\n${stdout}\n${stderr}`)
  return stdout
}

export const isRoot = () => process.getuid?.() === 0
export const which = (name: string) => Bun.which(name, { PATH: `${process.env.PATH}:/usr/sbin:/sbin` })

/** Installs Debian packages when a tool is missing (the bench starts what it needs, like CI). */
export async function ensureDebianPackage(binary: string, pkg: string): Promise<string> {
  const found = which(binary)
  if (found) return found
  const sudo = isRoot() ? [] : ['sudo']
  await run([...sudo, 'apt-get', 'update', '-qq'])
  await run([...sudo, 'apt-get', 'install', '-y', '-qq', pkg], { env: { DEBIAN_FRONTEND: 'noninteractive' } })
  const installed = which(binary)
  if (!installed) throw new Error(`installing ${pkg} did not provide ${binary}`)
  return installed
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

export const tempDir = (prefix: string) => mkdtempSync(join(tmpdir(), prefix))
export const removeDir = (dir: string) => rmSync(dir, { recursive: true, force: true })

/** Peak resident memory of a process so far, from /proc (Linux), in MB. */
export async function peakRssMb(pid: number): Promise<number | null> {
  const status = await Bun.file(`/proc/${pid}/status`).text().catch(() => '')
  const kb = Number(status.match(/VmHWM:\s+(\d+) kB/)?.[1])
  return Number.isFinite(kb) && kb > 0 ? Math.round(kb / 102.4) / 10 : null
}

/** Starts a new peak for `peakRssMb` (Linux: `clear_refs`); false when this process may not. */
export function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5')
    return true
  } catch {
    return false
  }
}

export async function waitForHttp(url: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await fetch(url).then((r) => r.ok, () => false)) return
    await Bun.sleep(50)
  }
  throw new Error(`${url} did not answer within ${timeoutMs} ms`)
}
