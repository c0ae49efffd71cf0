import { defineConfig, MikroORM, type Options } from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import pg from 'pg';
import { migrationsList } from './migrations/index.js';
import { guardPool } from './pool-guard.js';

export type Orm = MikroORM;

/** `entities`: every entity, registered explicitly (src/entities.ts); this folder imports no domain. */
export function ormConfig(databaseUrl: string, entities: Options['entities'], poolMax = 20): Options {
  return defineConfig({
    clientUrl: databaseUrl,
    entities,
    extensions: [Migrator],
    allowGlobalContext: false,
    forceUtcTimezone: true,
    debug: false,
    pool: { min: 0, max: poolMax },
    // See pool-guard.ts: connections that die mid-transaction go back to the pool instead of being lost.
    driverOptions: { onPoolCreated: guardPool },
    migrations: {
      tableName: 'mikro_orm_migrations',
      path: 'src/db/migrations',
      pathTs: 'src/db/migrations',
      migrationsList,
      transactional: true,
      allOrNothing: true,
      emit: 'ts',
      silent: true,
      snapshot: false,
    },
  });
}

export async function openOrm(databaseUrl: string, entities: Options['entities'], poolMax?: number): Promise<Orm> {
  return MikroORM.init(ormConfig(databaseUrl, entities, poolMax));
}

/** Apply every committed migration that has not run yet. Safe to call from several processes at once. */
export async function migrate(orm: Orm, databaseUrl: string): Promise<string[]> {
  // One process migrates at a time (a session lock on a dedicated connection); the others wait,
  // then find nothing pending.
  const lock = new pg.Client({ connectionString: databaseUrl });
  await lock.connect();
  try {
    await lock.query('select pg_advisory_lock(727274)');
    const done = await orm.migrator.up();
    return done.map((m) => m.name);
  } finally {
    await lock.end();
  }
}
