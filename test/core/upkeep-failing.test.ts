import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { PGlite } from '@electric-sql/pglite'
import { embeddedDatabase, type Database } from '@sightline/core/db'
import { createLogger } from '@sightline/core/log'
import { startEmbeddedUpkeep } from '@sightline/core/upkeep'
import { migratedSnapshot } from '../helpers/database'

/**
 * The embedded database's upkeep (core/src/upkeep.ts) when a table's vacuum fails, and keeps failing
 * (a damaged page, an index expression that now raises): the other tables are still looked after.
 * On PGlite whatever database the rest of the suite uses, as upkeep runs only there.
 */
describe('upkeep with a table whose vacuum fails', () => {
  let db: Database
  const lines: Record<string, unknown>[] = []
  const log = createLogger('debug', (line) => lines.push(JSON.parse(line)))

  beforeAll(async () => {
    const pg = await PGlite.create({ loadDataDir: await migratedSnapshot() })
    db = embeddedDatabase(pg)
    // Analyzing computes an expression index's values over a sample: this one raises once `broken` is set.
    await pg.exec(`
      create table upkeep_flags (broken boolean not null);
      insert into upkeep_flags values (false);
      create function upkeep_fragile(x int) returns int immutable language plpgsql as $$
        begin
          if (select broken from public.upkeep_flags) then raise exception 'damaged'; end if;
          return x;
        end $$;
      create table upkeep_fragile (x int);
      create index on upkeep_fragile (upkeep_fragile(x));
      insert into upkeep_fragile select generate_series(1, 2000);
      update upkeep_flags set broken = true;
      -- Made after it: looked at after it, in the catalog's order.
      create table upkeep_sound (x int);
      insert into upkeep_sound select generate_series(1, 2000);`)
  })
  afterAll(() => db.close())

  test('the failure is logged with its table, and the tables after it are still vacuumed and the log checkpointed', async () => {
    const upkeep = startEmbeddedUpkeep(db, log, { intervalMs: 3_600_000, rules: { checkpointWalBytes: 0 } })
    try {
      const done = await upkeep.runOnce()
      expect(done).toContainEqual({ table: 'upkeep_sound', upkeep: 'vacuum' })
      expect(done).not.toContainEqual({ table: 'upkeep_fragile', upkeep: 'vacuum' })
      expect(done).toContainEqual({ checkpoint: true })
      expect(lines).toContainEqual(expect.objectContaining({ level: 'warn', table: 'upkeep_fragile', error: expect.stringContaining('damaged') }))
      // Tried again at the next look, as autovacuum would.
      const failures = lines.filter((line) => line.table === 'upkeep_fragile' && line.level === 'warn').length
      await upkeep.runOnce()
      expect(lines.filter((line) => line.table === 'upkeep_fragile' && line.level === 'warn').length).toBe(failures + 1)
    } finally {
      await upkeep.stop()
    }
  })
})
