import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ensureDebianPackage, removeDir, run, tempDir } from './system'

export interface LoadResult {
  requestsPerSecond: number
  p50Ms: number
  p99Ms: number
  /** Non-2xx answers and socket errors: a run with any is not a valid measurement. */
  failures: number
  bytesPerSecond: number
}

export interface LoadOptions {
  url: string
  method?: string
  headers?: Record<string, string>
  /** One body for every request... */
  body?: string
  /** ...or a few to rotate through (wrk loads them once; useful when the server dedupes repeats). */
  bodies?: string[]
  /**
   * A token in the bodies that wrk replaces with a number unique to each request, so that a server
   * which dedupes repeated content (replay chunks) stores every request.
   */
  unique?: string
  connections?: number
  threads?: number
  durationSeconds?: number
}

const lua = (s: string) => JSON.stringify(s)

/** Drives load with wrk (an established generator in Debian) and reads its latency distribution. */
export async function runWrk(options: LoadOptions): Promise<LoadResult> {
  const wrk = await ensureDebianPackage('wrk', 'wrk')
  const dir = tempDir('sightline-wrk-')
  try {
    const bodies = options.bodies ?? (options.body !== undefined ? [options.body] : [])
    bodies.forEach((body, i) => writeFileSync(join(dir, `body-${i}`), body))
    const script = join(dir, 'script.lua')
    writeFileSync(
      script,
      `
wrk.method = ${lua(options.method ?? 'POST')}
${Object.entries(options.headers ?? {}).map(([k, v]) => `wrk.headers[${lua(k)}] = ${lua(v)}`).join('\n')}
local bodies = {}
for i = 0, ${bodies.length - 1} do
  local f = io.open(${lua(dir)} .. "/body-" .. i, "rb"); bodies[#bodies + 1] = f:read("*a"); f:close()
end
local token = ${options.unique ? lua(options.unique) : 'nil'}
local heads, tails = {}, {}
if token then
  for i, body in ipairs(bodies) do
    local at = string.find(body, token, 1, true)
    heads[i], tails[i] = string.sub(body, 1, at - 1), string.sub(body, at + #token)
  end
end
local salt = tostring(math.random(1, 1e9)) .. "-" .. tostring(os.time())
local n = 0
request = function()
  if #bodies == 0 then return wrk.format() end
  n = n + 1
  local i = (n % #bodies) + 1
  if token then return wrk.format(nil, nil, nil, heads[i] .. salt .. "-" .. n .. tails[i]) end
  return wrk.format(nil, nil, nil, bodies[i])
end
local failures = 0
response = function(status) if status < 200 or status > 299 then failures = failures + 1 end end
done = function(summary, latency, requests)
  local errors = summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout
  io.write(string.format("RESULT %f %f %f %d %f\\n", summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, errors + summary.errors.status, summary.bytes / (summary.duration / 1e6)))
end
`,
    )
    const out = await run([
      wrk,
      `-t${options.threads ?? 1}`,
      `-c${options.connections ?? 32}`,
      `-d${options.durationSeconds ?? 5}s`,
      '--timeout',
      '10s',
      '-s',
      script,
      options.url,
    ])
    const match = out.match(/RESULT (\S+) (\S+) (\S+) (\S+) (\S+)/)
    if (!match) throw new Error(`unexpected wrk output:\n${out}`)
    return {
      requestsPerSecond: Number(match[1]),
      p50Ms: Number(match[2]),
      p99Ms: Number(match[3]),
      failures: Number(match[4]),
      bytesPerSecond: Number(match[5]),
    }
  } finally {
    removeDir(dir)
  }
}
