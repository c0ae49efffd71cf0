import type { EntityManager, PostgreSqlConnection } from '@mikro-orm/postgresql';
import { CompiledQuery, type Kysely } from 'kysely';
import type { Pool } from 'pg';

/**
 * A parameterized statement (`$1, $2 ...`, bound by the server, not interpolated) on the entity
 * manager's pool, inside its transaction when it has one. For statements the ORM cannot express
 * (atomic counters, CTEs, bulk inserts).
 */
export async function sql<T>(em: EntityManager, text: string, params: readonly unknown[] = []): Promise<T[]> {
  const executor =
    (em.getTransactionContext() as Kysely<unknown> | undefined) ?? em.getConnection().getClient<unknown>();
  const res = await executor.executeQuery<T>(CompiledQuery.raw(text, params as unknown[]));
  return res.rows;
}

const pools = new WeakMap<object, Pool>();

/**
 * A named prepared statement on the ORM's own `pg` pool: each connection parses and plans it once
 * and then only executes it. For the hot paths (usage, effective access), whose planning costs more
 * than their execution. Inside a transaction it runs there instead, unprepared.
 */
export async function prepared<T>(
  em: EntityManager,
  name: string,
  text: string,
  params: readonly unknown[],
): Promise<T[]> {
  if (em.getTransactionContext()) return sql<T>(em, text, params);
  const connection = em.getConnection() as unknown as PostgreSqlConnection;
  let pool = pools.get(connection);
  if (!pool) {
    pool = (await connection.getNativeClient()) as unknown as Pool;
    pools.set(connection, pool);
  }
  const res = await pool.query({ name, text, values: params as unknown[] });
  return res.rows as T[];
}

/**
 * Runs a `delete ... where id in (select id ... limit $batch) returning 1` until a batch comes back
 * short, so purges take short locks; `$batch` is appended to the parameters. Returns the rows deleted.
 */
export async function deleteInBatches(
  em: EntityManager,
  text: string,
  params: readonly unknown[],
  batch = 5000,
): Promise<number> {
  let total = 0;
  for (;;) {
    const n = (await sql(em, text, [...params, batch])).length;
    total += n;
    if (n < batch) return total;
  }
}
