import type { EntityManager, PostgreSqlConnection } from '@mikro-orm/postgresql';
import { CompiledQuery, type Kysely } from 'kysely';
import type { Pool, PoolClient, QueryResult } from 'pg';
import { DEFAULT_DB_BOUNDS } from './bounds.js';
import { poolBounds } from './pool-guard.js';

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
  return preparedOnPool<T>(await poolOf(em), name, text, params);
}

/** `prepared` on a `pg` pool. */
export async function preparedOnPool<T>(
  pool: Pool,
  name: string,
  text: string,
  params: readonly unknown[],
): Promise<T[]> {
  return (await pool.query({ name, text, values: params as unknown[] })).rows as T[];
}

/** The ORM's own `pg` pool. */
export async function poolOf(em: EntityManager): Promise<Pool> {
  const connection = em.getConnection() as unknown as PostgreSqlConnection;
  let pool = pools.get(connection);
  if (!pool) {
    pool = (await connection.getNativeClient()) as unknown as Pool;
    pools.set(connection, pool);
  }
  return pool;
}

/** The statements `preparedMany` has prepared on each connection (a new connection starts empty). */
const preparedOn = new WeakMap<PoolClient, Set<string>>();

/** A parameter as an SQL literal: the values the hot statements take (ids, integers, null). */
function literal(client: PoolClient, v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'number' && Number.isSafeInteger(v)) return String(v);
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (typeof v === 'string') return client.escapeLiteral(v);
  throw new TypeError(`preparedMany: a parameter of type ${typeof v} has no literal form here`);
}

/**
 * What `preparedMany` throws when PostgreSQL refused one of its statements and the session lived on: the batch
 * rolled back, none of it applied (`cause`: PostgreSQL's error).
 */
export class BatchRolledBack extends Error {
  constructor(override readonly cause: unknown) {
    super(`the batch rolled back: ${(cause as Error).message}`);
  }
}

/**
 * One prepared statement run for several parameter lists in one round trip: `PREPARE`d once per connection (under
 * `<name>_many`), then one simple-query message of `EXECUTE <name>_many(...)` statements, each with its own
 * snapshot (READ COMMITTED), all in one implicit transaction: they commit together (one commit, one WAL flush) or,
 * when any fails, not at all. Parameters go as literals, quoted by the driver's `escapeLiteral`. Returns each list's
 * rows, in order.
 *
 * On an error it asks the same session `select 1`: when that answers, the failure was a statement's and the batch
 * rolled back (`BatchRolledBack`); otherwise the connection is gone and the outcome unknown (the error as it came).
 */
export async function preparedMany<T>(
  pool: Pool,
  name: string,
  text: string,
  paramsList: readonly (readonly unknown[])[],
): Promise<T[][]> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    let names = preparedOn.get(client);
    if (!names) preparedOn.set(client, (names = new Set()));
    if (!names.has(name)) {
      await client.query(`prepare ${name}_many as ${text}`);
      names.add(name);
    }
    const statements = paramsList.map(
      (params) => `execute ${name}_many(${params.map((v) => literal(client, v)).join(', ')})`,
    );
    const res = (await client.query(statements.join(';\n'))) as unknown as QueryResult | QueryResult[];
    const results = Array.isArray(res) ? res : [res];
    return results.map((r) => r.rows as T[]);
  } catch (err) {
    const alive = await client.query('select 1').then(
      () => true,
      () => false,
    );
    if (alive) throw new BatchRolledBack(err);
    broken = err instanceof Error ? err : new Error(String(err));
    throw err;
  } finally {
    client.release(broken);
  }
}

/**
 * Runs a `delete ... where id in (select id ... limit $batch) returning 1` until a batch comes back
 * short, so purges take short locks; `$batch` is appended to the parameters. Returns the rows deleted.
 * Each batch is a transaction of its own with the long statement bound (a batch of a big table's rows, with
 * what cascades from them, may take longer than a request's statement).
 */
export async function deleteInBatches(
  em: EntityManager,
  text: string,
  params: readonly unknown[],
  batch = 5000,
): Promise<number> {
  let total = 0;
  for (;;) {
    const n = (
      await em.transactional(async (tx) => {
        await longStatements(tx);
        return sql(tx, text, [...params, batch]);
      })
    ).length;
    total += n;
    if (n < batch) return total;
  }
}

/**
 * Gives the current transaction's statements the long bound (`SET LOCAL statement_timeout`, undone by its commit or
 * rollback) instead of the ordinary one: for long legitimate work (the roll-up, an import, a purge, an app's
 * deletion). `ms` (0: none) overrides the pool's `longStatementMs`. The pool's guard sees the setting and waits as
 * long, checking meanwhile that the server still answers on another connection, so a frozen server still ends
 * such a statement within seconds.
 */
export async function longStatements(em: EntityManager, ms?: number): Promise<void> {
  if (!em.isInTransaction()) throw new Error('longStatements: call it inside a transaction (it is SET LOCAL)');
  const bound = ms ?? poolBounds(await poolOf(em))?.longStatementMs ?? DEFAULT_DB_BOUNDS.longStatementMs;
  await sql(em, `set local statement_timeout = ${Math.max(0, Math.trunc(bound))}`);
}

/**
 * For a transaction that waits on something other than the database while it holds its locks (a provider call in
 * a workflow's activity): its session may stay idle in it for `ms` (`SET LOCAL idle_in_transaction_session_timeout`)
 * instead of the pool's 2 s, after which PostgreSQL would end it. Not for what a request waits on: the short bound is
 * also what keeps a COMMIT whose caller got a 503 from applying later
 * (docs/decisions/0248-a-write-answered-503-does-not-commit-later-unless-its.md).
 */
export async function idleInTransactionFor(em: EntityManager, ms: number): Promise<void> {
  if (!em.isInTransaction()) throw new Error('idleInTransactionFor: call it inside a transaction (it is SET LOCAL)');
  await sql(em, `set local idle_in_transaction_session_timeout = ${Math.max(0, Math.trunc(ms))}`);
}
