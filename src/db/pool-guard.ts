// A connection that dies inside a transaction must go back to the pool (as broken), or it is lost.
import type { Pool, PoolClient } from 'pg';

/**
 * kysely's controlled transactions, which MikroORM's `transactional` uses, release their connection
 * only when BEGIN, COMMIT or ROLLBACK succeeds. When PostgreSQL goes away mid-transaction none of them
 * can, so the connection stays checked out for ever; once `DB_POOL_MAX` of them are lost (a restart of
 * PostgreSQL under load is enough) every query waits for a free connection for ever and the service
 * hangs although PostgreSQL is back. This guard hands a checked-out connection whose socket errored or
 * ended back to the pool as broken (the pool discards it and opens a new one), and makes a later
 * release by its holder harmless.
 */
export function guardPool(pool: Pool): void {
  const connect = pool.connect.bind(pool) as (...args: unknown[]) => Promise<PoolClient> | undefined;
  (pool as unknown as { connect: typeof connect }).connect = (...args: unknown[]) => {
    if (args.length > 0) return connect(...args); // the callback form: not used by kysely
    return connect()!.then(guardClient);
  };
}

function guardClient(client: PoolClient): PoolClient {
  const release = client.release.bind(client);
  let released = false;
  const lost = (err?: unknown) => {
    // After the holder's own error handling has had its turn.
    setImmediate(() => {
      if (!released) client.release(err instanceof Error ? err : new Error('connection to PostgreSQL lost'));
    });
  };
  const onEnd = () => lost();
  client.once('error', lost);
  client.once('end', onEnd);
  client.release = (err?: Error | boolean) => {
    if (released) return;
    released = true;
    client.off('error', lost);
    client.off('end', onEnd);
    release(err);
  };
  return client;
}
