import type { SiteSend } from './site'

/** A node of an rrweb snapshot, as much of it as the tests read. */
export interface Node {
  id: number
  tagName?: string
  attributes?: Record<string, unknown>
  childNodes?: Node[]
}

export const find = (node: Node, test: (node: Node) => boolean): Node | undefined => (test(node) ? node : node.childNodes?.map((child) => find(child, test)).find(Boolean))
export const ids = (node: Node): number[] => [node.id, ...(node.childNodes ?? []).flatMap(ids)]
export const byId = (node: Node, id: string) => find(node, (n) => n.attributes?.id === id)!

/**
 * What the recording sent says of one part of the page: each full snapshot's copy of it (`part` picks
 * it from the snapshot's root), the attribute changes and additions in it, its input events' data,
 * and every send whole as text (to look for what must not be there).
 */
export function recordingOf(sends: readonly SiteSend[], part: (root: Node) => Node) {
  const events = sends.filter((s) => s.path === '/events').flatMap((s) => s.body.events) as { type: number; data: any }[]
  const snapshots = events.filter((e) => e.type === 2).map((e) => part(e.data.node))
  const inPart = new Set(snapshots.flatMap(ids))
  const mutations = events.filter((e) => e.type === 3 && e.data.source === 0)
  return {
    snapshots,
    attributes: mutations.flatMap((e) => e.data.attributes.filter((change: Node) => inPart.has(change.id))),
    adds: mutations.flatMap((e) => e.data.adds.filter((add: { parentId: number }) => inPart.has(add.parentId))),
    inputs: events.filter((e) => e.type === 3 && e.data.source === 5 && inPart.has(e.data.id)).map((e) => e.data),
    everything: JSON.stringify(sends),
  }
}
