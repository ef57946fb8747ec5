import { authValues, type IdentifyRow } from '@sightline/core/ingest/identity/service'
import type { TestCore } from './core'

/** An identify as the route makes it, to hand to the writer with others in one commit; null fields: a plain identify. */
export const identifyRow = (core: TestCore, endUserId: string, attributes: Record<string, unknown>, authFields: string[] | null = ['email']): IdentifyRow => ({
  projectId: core.project.projectId,
  endUserId,
  sessionOfMadeId: null,
  attributes,
  auth: authFields ? authValues(attributes, authFields) : null,
  at: Date.now(),
})
