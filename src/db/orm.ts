import { defineConfig, MikroORM, type Options } from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import pg, { type Pool } from 'pg';
import { connectionOptions, DEFAULT_DB_BOUNDS, type DbBounds } from './bounds.js';
import { migrationsList } from './migrations/index.js';
import { guardPool } from './pool-guard.js';

export type Orm = MikroORM;

/**
 * `entities`: every entity, registered explicitly (src/entities.ts); this folder imports no domain. `bounds`: the
 * waits on PostgreSQL (bounds.ts), for every connection of the pool.
 */
export function ormConfig(
  databaseUrl: string,
  entities: Options['entities'],
  poolMax = 20,
  bounds: DbBounds = DEFAULT_DB_BOUNDS,
): Options {
  return defineConfig({
    clientUrl: databaseUrl,
    entities,
    extensions: [Migrator],
    allowGlobalContext: false,
    forceUtcTimezone: true,
    debug: false,
    pool: { min: 0, max: poolMax },
    // See pool-guard.ts: connections that die mid-transaction go back to the pool instead of being lost, and
    // statements that get no answer end with their connection.
    driverOptions: { ...connectionOptions(bounds), onPoolCreated: (pool: Pool) => guardPool(pool, bounds) },
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

export async function openOrm(
  databaseUrl: string,
  entities: Options['entities'],
  poolMax?: number,
  bounds?: DbBounds,
): Promise<Orm> {
  return MikroORM.init(ormConfig(databaseUrl, entities, poolMax, bounds));
}

/** Apply every committed migration that has not run yet. Safe to call from several processes at once. */
export async function migrate(orm: Orm, databaseUrl: string, bounds: DbBounds = DEFAULT_DB_BOUNDS): Promise<string[]> {
  // One process migrates at a time (a session lock on a dedicated connection); the others wait,
  // then find nothing pending.
  const { connectionTimeoutMillis, keepAlive, keepAliveInitialDelayMillis } = connectionOptions(bounds);
  const lock = new pg.Client({
    connectionString: databaseUrl,
    connectionTimeoutMillis,
    keepAlive,
    keepAliveInitialDelayMillis,
  });
  await lock.connect();
  try {
    await lock.query('select pg_advisory_lock(727274)');
    // All of them in one transaction (allOrNothing), whose statements may take as long as they need (an index
    // built on a big table); the pool's guard still ends them within seconds if the server stops answering.
    const connection = orm.em.getConnection();
    const done = await connection.transactional(async (trx) => {
      await connection.execute('set local statement_timeout = 0', [], 'run', trx);
      return orm.migrator.up({ transaction: trx });
    });
    return done.map((m) => m.name);
  } finally {
    await lock.end();
  }
}
