import { ApiError } from '../../errors'
import type { Gate } from '../../writer'
import { admitInOrder, isOverLimit, monthOf } from './service'
import { addUsage, lockUsage, USAGE_SHARDS, type ShardDelta, type UsageDelta } from './store'

export interface Quota {
  /** The writer's gate: decides admission inside the commit, under the counter's row lock. */
  gate: Gate
  /** Fast refusal before any work, from what this process last saw committed. */
  assertUnderLimit(projectId: string, monthlyLimit: number | null): void
  /** True once the project has reached its limit (answers then carry `monthlyLimitReached`). */
  reached(projectId: string, monthlyLimit: number | null): boolean
}

export const limitReachedError = () =>
  new ApiError('monthly_limit_reached', 'the project has reached its monthly limit; nothing was stored', { body: { monthlyLimitReached: true } })

export function createQuota(now: () => number = Date.now): Quota {
  // Totals this process saw committed, per project and month. Usage only grows within a month, so
  // a stale total can only under-report; the gate stays the authority.
  const seen = new Map<string, number>()
  const keyOf = (projectId: string, month: string) => `${projectId} ${month}`

  const gate: Gate = {
    async admit(tx, requests) {
      const month = monthOf(now())
      const verdicts: (ApiError | null)[] = requests.map(() => null)
      const byProject = new Map<string, number[]>()
      requests.forEach((request, i) => {
        const indexes = byProject.get(request.projectId)
        if (indexes) indexes.push(i)
        else byProject.set(request.projectId, [i])
      })

      // A shard picked per commit: two commits of an unlimited project rarely share a row (and wait on
      // it). A limited project counts in shard 0, which its commits lock: a commit waiting there reads
      // the other shards as they were when it started waiting, and would miss a row made meanwhile.
      const randomShard = Math.floor(Math.random() * USAGE_SHARDS)
      const deltas: ShardDelta[] = []
      for (const projectId of [...byProject.keys()].sort()) {
        const all = byProject.get(projectId)!
        // A request without a limit is not the project's traffic (the internal scan findings): never
        // refused, and not what decides whether the project's own requests beside it are limited.
        const indexes = all.filter((i) => requests[i].monthlyLimit !== null)
        const limit = indexes.length > 0 ? requests[indexes[0]].monthlyLimit : null
        const items = indexes.map((i) => requests[i].items)
        // A limited project's counters are locked before anything is written, so that concurrent
        // commits (of any process) decide one after the other. An unlimited one is only counted, in
        // one shard at the end of the transaction, so commits of a busy project overlap.
        const admitted = limit === null ? items.map(() => true) : admitInOrder(await lockUsage(tx, projectId, month), limit, items)
        let events = all.reduce((n, i) => (requests[i].monthlyLimit === null ? n + requests[i].items : n), 0)
        admitted.forEach((ok, j) => {
          if (ok) events += items[j]
          else verdicts[indexes[j]] = limitReachedError()
        })
        deltas.push({ projectId, month, events, shard: limit === null ? randomShard : 0 })
      }
      const totals = new Map<string, number>()
      const keep = (rows: UsageDelta[]) => rows.forEach((t) => totals.set(t.projectId, t.events))
      const shardOf = new Map(deltas.map((d) => [d.projectId, d.shard]))
      return {
        verdicts,
        record: async (recordTx) => keep(await addUsage(recordTx, deltas)),
        // Resends were counted with their requests above; the same shards take them back.
        uncount: async (uncountTx, alreadyStored) =>
          keep(
            await addUsage(
              uncountTx,
              [...alreadyStored].sort(([a], [b]) => (a < b ? -1 : 1)).map(([projectId, n]) => ({ projectId, month, events: -n, shard: shardOf.get(projectId) ?? randomShard })),
            ),
          ),
        onCommit: () => totals.forEach((events, projectId) => seen.set(keyOf(projectId, month), Math.max(events, seen.get(keyOf(projectId, month)) ?? 0))),
        // Refused, though the project ended the commit under its limit: the resends counted back made
        // room. Decided again first in the next commit, where at least the first of them is admitted,
        // so this ends; should the room be gone by then, the refusal stands.
        decideAgain: (i) => {
          const { projectId, monthlyLimit } = requests[i]
          const total = totals.get(projectId)
          return monthlyLimit !== null && total !== undefined && total < monthlyLimit
        },
      }
    },
  }

  // Every request asks, most of them for unlimited projects: those are answered without a lookup.
  const reached = (projectId: string, monthlyLimit: number | null) =>
    monthlyLimit !== null && isOverLimit(seen.get(keyOf(projectId, monthOf(now()))), monthlyLimit)

  return {
    gate,
    reached,
    assertUnderLimit(projectId, monthlyLimit) {
      if (reached(projectId, monthlyLimit)) throw limitReachedError()
    },
  }
}
