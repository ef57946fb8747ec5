/** Path -> methods served there: what `Allow` says on a 405, and where CORS answers preflight. */
export type RouteTable = ReadonlyMap<string, readonly string[]>

/**
 * The methods each path answers, in `Allow` order: its routes' own, HEAD beside GET (Elysia answers
 * HEAD from the GET handler), and OPTIONS last where preflight is answered. Wildcard routes (the
 * preflight route itself) name no path.
 */
export function routeTable(routes: Iterable<{ method: string; path: string }>, answersPreflight: (path: string) => boolean): RouteTable {
  const table = new Map<string, string[]>()
  for (const { method, path } of routes) {
    if (path.includes('*')) continue
    const methods = table.get(path) ?? []
    for (const served of method === 'GET' ? ['GET', 'HEAD'] : [method]) if (!methods.includes(served)) methods.push(served)
    table.set(path, methods)
  }
  for (const [path, methods] of table) if (answersPreflight(path) && !methods.includes('OPTIONS')) methods.push('OPTIONS')
  return table
}
