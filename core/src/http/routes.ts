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

/**
 * The path of a request URL without allocating a URL object (this runs on every request). Bun hands
 * a request without a Host (HTTP/1.0 allows one) its target as is, a path: that is its own path.
 */
export function pathOf(url: string): string {
  const start = url.startsWith('/') ? 0 : url.indexOf('/', url.indexOf('//') + 2)
  if (start === -1) return '/'
  const end = url.indexOf('?', start)
  return end === -1 ? url.slice(start) : url.slice(start, end)
}
