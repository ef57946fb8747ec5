/** Polls `check` until it holds or `ms` pass; returns how long it took, or Infinity. */
export async function within(ms: number, check: () => Promise<boolean>): Promise<number> {
  const start = performance.now()
  while (performance.now() - start < ms) {
    if (await check()) return performance.now() - start
    await Bun.sleep(10)
  }
  return Infinity
}
