export const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/** Runs a measurement `runs` times and returns the median of each numeric field. */
export async function medianOf<T extends Record<string, number>>(runs: number, measure: (run: number) => Promise<T>): Promise<T & { runs: number }> {
  const results: T[] = []
  for (let i = 0; i < runs; i++) results.push(await measure(i))
  const keys = Object.keys(results[0]) as (keyof T)[]
  return { ...(Object.fromEntries(keys.map((k) => [k, median(results.map((r) => r[k] as number))])) as T), runs }
}

export interface Row {
  name: string
  value: string
  target?: string
  /** undefined: informational, no target. */
  met?: boolean
}

/** A Markdown table, ready for the README. */
export function table(title: string, rows: Row[], machine = describeMachine()): string {
  const lines = [
    `### ${title}`,
    '',
    `${machine}`,
    '',
    '| measure | result | target | met |',
    '|---|---|---|---|',
    ...rows.map((r) => `| ${r.name} | ${r.value} | ${r.target ?? ''} | ${r.met === undefined ? '' : r.met ? 'yes' : 'no'} |`),
  ]
  return lines.join('\n')
}

export function describeMachine(): string {
  const os = require('node:os') as typeof import('node:os')
  const cpu = os.cpus()[0]?.model.trim() ?? 'unknown CPU'
  return `${os.cpus().length} × ${cpu}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Linux ${os.release()}, Bun ${Bun.version}; ${new Date().toISOString().slice(0, 10)}`
}

export const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })
