import type { EntityManager } from '@mikro-orm/postgresql';
import { CompiledQuery, type Kysely } from 'kysely';

/**
 * A parameterized statement (`$1, $2 ...`, bound by the server, not interpolated) on the entity
 * manager's pool, inside its transaction when it has one. Used on hot paths and for statements the
 * ORM cannot express (atomic counters, CTEs).
 */
export async function sql<T>(em: EntityManager, text: string, params: readonly unknown[] = []): Promise<T[]> {
  const executor = (em.getTransactionContext() as Kysely<unknown> | undefined) ?? em.getConnection().getClient<unknown>();
  const res = await executor.executeQuery<T>(CompiledQuery.raw(text, params as unknown[]));
  return res.rows;
}
