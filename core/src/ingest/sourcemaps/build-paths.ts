const FILE_URL = /^file:(?:\/\/[^/]*)?/i
const DEPENDENCY = /(?:^|\/)node_modules\//

/**
 * Each `file://` source of a map as frames store it and grouping reads it: relative to the build's
 * root. Some bundlers write sources without a sourceRoot as absolute URLs of the build machine
 * (`file:///home/ci/build/app/src/cart.ts`), and the folder a build runs in differs between CI
 * runners and checkouts: taken as they are, the same bug built twice would be two files, so two
 * Issues. Grouping drops a `webpack://app/` prefix (normalizeFile) because the path after it is the
 * project's own; an absolute path carries the machine's folders before the project's, which cannot
 * be told from one path alone, so they are dropped here, where all the map's sources are known.
 *
 * The root is the folder the map's own sources (not its dependencies') share, so a map of
 * `<root>/src/cart.ts` and `<root>/index.ts` stores `src/cart.ts`, as a bundler writing relative
 * sources would. The root depends only on the sources' paths below it, the same on every machine.
 * A dependency outside the root is kept from `node_modules/` on (still a dependency to grouping);
 * anything else outside it loses only its `file://`. Sources of other schemes are not in the result.
 */
export function withoutBuildRoot(sources: readonly string[]): Map<string, string> {
  const files = sources.filter((source) => typeof source === 'string' && FILE_URL.test(source))
  if (files.length === 0) return new Map()
  const pathOf = (source: string) => source.replace(FILE_URL, '')
  const own = files.filter((source) => !DEPENDENCY.test(pathOf(source)))
  // A map of dependencies only (a vendor chunk) has no root of its own: the folder its sources share
  // lies inside node_modules, and cut there they would lose what makes them dependencies to grouping.
  const root = own.length > 0 ? commonFolder(own.map(pathOf)) : ''
  return new Map(
    files.map((source) => {
      const path = pathOf(source)
      if (root !== '' && path.startsWith(root)) return [source, path.slice(root.length)]
      const dependency = path.search(DEPENDENCY)
      return [source, dependency === -1 ? path : path.slice(dependency).replace(/^\//, '')]
    }),
  )
}

/** The longest folder (ending in `/`) that holds every one of `paths`; '' when they share none. */
function commonFolder(paths: readonly string[]): string {
  let folder = paths[0].slice(0, paths[0].lastIndexOf('/') + 1)
  for (const path of paths) {
    while (folder !== '' && !path.startsWith(folder)) folder = folder.slice(0, folder.slice(0, -1).lastIndexOf('/') + 1)
  }
  return folder
}
