// Every wait on PostgreSQL is bounded: connecting, waiting for a pooled connection, a statement, a transaction left
// idle. Without these a database that accepts connections but never answers (frozen, partitioned, a lock pile-up)
// held requests for minutes; with them every request that needs it answers 503 within 5 s (docs/decisions/README.md,
// "Bounded waits").
import pg from 'pg';
import type { Config } from '../config.js';
import { guardPool, type DbBounds } from './pool-guard.js';

// The bounds' shape is the guard's (it keeps them per pool): declared there, handed on from here.
export type { DbBounds };

export const DEFAULT_DB_BOUNDS: DbBounds = {
  connectMs: 2000,
  statementMs: 2000,
  longStatementMs: 600_000,
  idleInTransactionMs: 2000,
};

export function dbBounds(
  config: Pick<
    Config,
    | 'DB_CONNECT_TIMEOUT_MS'
    | 'DB_STATEMENT_TIMEOUT_MS'
    | 'DB_LONG_STATEMENT_TIMEOUT_MS'
    | 'DB_IDLE_IN_TRANSACTION_TIMEOUT_MS'
  >,
): DbBounds {
  return {
    connectMs: config.DB_CONNECT_TIMEOUT_MS,
    statementMs: config.DB_STATEMENT_TIMEOUT_MS,
    longStatementMs: config.DB_LONG_STATEMENT_TIMEOUT_MS,
    idleInTransactionMs: config.DB_IDLE_IN_TRANSACTION_TIMEOUT_MS,
  };
}

/**
 * `pg` options carrying the bounds: the connect timeout (for a pool also the wait for a free connection), the
 * server-side timeouts as startup parameters (so they hold from the first statement, with no extra round trip),
 * and TCP keepalive, so a connection to a host that vanished is noticed while it is idle.
 */
export function connectionOptions(b: DbBounds) {
  return {
    connectionTimeoutMillis: b.connectMs,
    statement_timeout: b.statementMs,
    idle_in_transaction_session_timeout: b.idleInTransactionMs,
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
  };
}

/** A `pg` pool with the bounds and the guard (pool-guard.ts): for code that does not go through the ORM. */
export function boundedPool(databaseUrl: string, opts: { max: number; bounds: DbBounds }): pg.Pool {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: opts.max, ...connectionOptions(opts.bounds) });
  guardPool(pool, opts.bounds);
  return pool;
}
