// A connection that dies inside a transaction must go back to the pool (as broken), or it is lost; a connection
// whose server stopped answering must be dropped, or it holds its caller for ever.
import type { Client, Pool, PoolClient } from 'pg';
import { isDatabaseUnavailable, markOutcomeUnknown } from './unavailable.js';

/** How much longer than a statement's `statement_timeout` the client waits for its answer. */
export const ANSWER_MARGIN_MS = 500;
/** How often the guard looks at the statements in flight. */
const TICK_MS = 100;
/** The most often a long statement's pool checks that the server answers on a new connection. */
const PROBE_EVERY_MS = 1000;

/** The waits a guarded pool keeps (src/db/bounds.ts sets them from the configuration). */
export interface DbBounds {
  /** Connecting to PostgreSQL, and waiting for a free pooled connection (`pg` bounds both with one setting). */
  connectMs: number;
  /** Every session's `statement_timeout`; the client waits `ANSWER_MARGIN_MS` longer, then drops the connection. */
  statementMs: number;
  /** The `statement_timeout` `longStatements` (sql.ts) sets for one transaction of long work. */
  longStatementMs: number;
  /** Every session's `idle_in_transaction_session_timeout`. */
  idleInTransactionMs: number;
}

const boundsOf = new WeakMap<Pool, DbBounds>();

/** The bounds a pool was guarded with (undefined for an unguarded pool). */
export const poolBounds = (pool: Pool): DbBounds | undefined => boundsOf.get(pool);

/**
 * kysely's controlled transactions, which MikroORM's `transactional` uses, release their connection
 * only when BEGIN, COMMIT or ROLLBACK succeeds. When PostgreSQL goes away mid-transaction none of them
 * can, so the connection stays checked out for ever; once `DB_POOL_MAX` of them are lost (a restart of
 * PostgreSQL under load is enough) every query waits for a free connection for ever and the service
 * hangs although PostgreSQL is back. This guard hands a checked-out connection whose socket errored or
 * ended back to the pool as broken (the pool discards it and opens a new one), and makes a later
 * release by its holder harmless.
 *
 * With `bounds`, it also ends statements that get no answer (`watchStatements`).
 */
export function guardPool(pool: Pool, bounds?: DbBounds): void {
  const connect = pool.connect.bind(pool) as (...args: unknown[]) => Promise<PoolClient> | undefined;
  (pool as unknown as { connect: typeof connect }).connect = (...args: unknown[]) => {
    if (args.length > 0) return connect(...args); // the callback form: not used by kysely
    return connect()!.then(guardClient);
  };
  if (bounds) {
    boundsOf.set(pool, bounds);
    watchStatements(pool, bounds);
  }
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

/** What the guard knows of one connection. */
interface Watched {
  /** `statement_timeout` set for the session (`SET`) and for the open transaction (`SET LOCAL`); null: the pool's. */
  session: number | null;
  local: number | null;
  /** The statement in flight when last looked at, and since when. */
  seen: object | null;
  since: number;
}

/** Statements that change what the guard waits for: a statement_timeout, the end of a transaction, a reset. */
const SETTING =
  /^\s*(?:set\s+(local\s+|session\s+)?statement_timeout\b|commit\b|end\b|abort\b|rollback\s*;?\s*$|reset\s|discard\s)/i;

function noted(w: Watched, text: string): void {
  const head = text.trimStart().slice(0, 8).toLowerCase();
  if (head.startsWith('set')) {
    const m = /(?:=|\bto)\s*'?\s*(\d+)\s*(ms|s|min)?\s*'?\s*;?\s*$/i.exec(text);
    const value = m ? Number(m[1]) * ({ s: 1000, min: 60_000 }[m[2]?.toLowerCase() as 's' | 'min'] ?? 1) : null;
    if (/^\s*set\s+local\s/i.test(text)) w.local = value;
    else w.session = value;
  } else if (head.startsWith('reset') || head.startsWith('discard')) {
    if (/^\s*(reset\s+(all|statement_timeout)|discard\s+all)\b/i.test(text)) w.session = w.local = null;
  } else w.local = null; // commit, end, abort, rollback: SET LOCAL ends with the transaction
}

/** The statement a `pg` client is running (pg 8 keeps it in `_activeQuery`; `activeQuery` warns). */
const inFlight = (client: Client): object | null =>
  (client as unknown as { _activeQuery?: object | null })._activeQuery ?? null;

/**
 * Ends statements whose answer does not come. A server that stops answering (SIGSTOP, a partition, a host gone)
 * sends nothing, not even an error, so a statement on it waits for ever; `pg`'s own `query_timeout` answers the
 * caller but leaves the connection busy with the lost statement (and the pool hands it out again). Here every
 * connection's statement in flight is looked at every 100 ms:
 *
 * - a statement under the ordinary `statement_timeout` that is not answered within it plus `ANSWER_MARGIN_MS`
 *   (PostgreSQL would have cancelled it by then) has its connection destroyed: the statement fails with
 *   `PostgreSQL did not answer within ...` (code `ETIMEDOUT`, a 503), the pool opens a new connection next time;
 * - a statement given a longer bound (`SET LOCAL statement_timeout`, see `longStatements`) may run that long, but
 *   once past the ordinary bound the pool checks, at most once a second, that the server answers `select 1` on a
 *   new connection: when that fails too, the statement's connection is destroyed the same way.
 *
 * Destroying is the point: the connection's socket is closed, so nothing that arrives later is mistaken for the
 * answer of another statement, and the pool never hands out a connection stuck behind a lost one.
 */
function watchStatements(pool: Pool, bounds: DbBounds): void {
  const watched = new Map<Client, Watched>();
  const probe = new Liveness(pool, bounds.connectMs);
  let timer: NodeJS.Timeout | undefined;
  const tick = () => {
    const now = Date.now();
    const ordinary = bounds.statementMs + ANSWER_MARGIN_MS;
    for (const [client, w] of watched) {
      if ((client as unknown as { _ended?: boolean })._ended) {
        watched.delete(client);
        continue;
      }
      const q = inFlight(client);
      if (q !== w.seen) {
        w.seen = q;
        w.since = now;
        continue;
      }
      if (!q) continue;
      const age = now - w.since;
      if (age <= ordinary) continue;
      const timeout = w.local ?? w.session ?? bounds.statementMs;
      if (timeout > 0 && age > timeout + ANSWER_MARGIN_MS) {
        end(client, w, `PostgreSQL did not answer within ${timeout + ANSWER_MARGIN_MS} ms`);
        continue;
      }
      // A long statement: fine while the server answers others.
      const last = probe.last;
      if (last && !last.answered && last.startedAt > w.since)
        end(client, w, `PostgreSQL stopped answering (a new connection got no answer either) after ${age} ms`);
      else probe.check();
    }
    if (watched.size === 0) {
      clearInterval(timer);
      timer = undefined;
    }
  };
  pool.on('connect', (client: PoolClient) => {
    const w: Watched = { session: null, local: null, seen: null, since: 0 };
    watched.set(client, w);
    // Errors reach the statement that was running; a connection must not crash the process with them.
    client.on('error', () => undefined);
    const query = client.query as (...args: unknown[]) => unknown;
    (client as unknown as { query: typeof query }).query = function (this: unknown, ...args: unknown[]) {
      const config = args[0] as string | { text?: unknown } | undefined;
      const text = typeof config === 'string' ? config : typeof config?.text === 'string' ? config.text : null;
      if (text !== null && SETTING.test(text)) noted(w, text);
      if (text === null) return query.apply(this, args);
      // A statement the server may have applied although no answer came says so (`isOutcomeUnknown`), in both of
      // pg's forms: a callback (the pool's own `query`) and a promise.
      const mark = (err: unknown) => {
        if (err && lostAnswer(err) && outcomeUnknown(client, text)) markOutcomeUnknown(err);
      };
      const last = args.length - 1;
      const cb = args[last];
      if (typeof cb === 'function') {
        args[last] = (err: unknown, res: unknown) => (mark(err), (cb as (e: unknown, r: unknown) => void)(err, res));
        return query.apply(this, args);
      }
      const result = query.apply(this, args);
      if (!(result instanceof Promise)) return result;
      return result.catch((err: unknown) => {
        mark(err);
        throw err;
      });
    } as typeof query;
    timer ??= setInterval(tick, TICK_MS).unref();
  });
  // A connection back in the pool is outside any transaction; a SET LOCAL sent outside one did nothing.
  pool.on('release', (_err: Error | undefined, client: PoolClient) => {
    const w = watched.get(client);
    if (w) w.local = null;
  });
  pool.on('remove', (client: PoolClient) => watched.delete(client));
}

function end(client: Client, w: Watched, message: string): void {
  w.seen = null;
  destroy(client, message);
}

/**
 * An error that leaves a statement's fate open: the connection was lost or dropped, or the server ended the session
 * (a shutdown's 57P01 can come after a COMMIT it finished). Not a statement the server cancelled itself (57014) or a
 * session it ended for idling in a transaction (25P03): those applied nothing.
 */
const lostAnswer = (err: unknown) =>
  isDatabaseUnavailable(err) && !['57014', '25P03'].includes(String((err as { code?: unknown })?.code));

/**
 * SQL functions that write, called from a `select` (`select ... from usage_ingest_batch(...)`): such a select is a
 * write. `test/unit/outcome-unknown.test.ts` fails on a function of the migrations that writes and is missing here.
 */
export const WRITING_FUNCTIONS = ['usage_ingest', 'usage_ingest_batch', 'access_usage_flush'];
const CALLS_WRITER = new RegExp(`\\b(${WRITING_FUNCTIONS.join('|')})\\s*\\(`, 'i');

/** Statements that change nothing outside a transaction block: reads, settings, transaction control, PREPARE. */
const NO_CHANGE =
  /^(select|show|set|reset|discard|begin|start\s+transaction|rollback|abort|savepoint|release|prepare|deallocate|listen|unlisten)\b/;

/**
 * Whether the server may have applied, or may still apply, a statement whose answer never came. A COMMIT (or END)
 * may already be under way on the server: PostgreSQL holds interrupts while it commits, so no timeout of its own
 * stops one it has read, and once its commit record is written nothing can. A statement outside a transaction
 * block commits by itself, and a frozen server still reads it from its socket when it resumes. Any other statement
 * inside a transaction is harmless: the transaction can no longer commit (the connection is gone), so nothing
 * applies. Statements that change nothing (`NO_CHANGE`, a `select` calling no `WRITING_FUNCTIONS`) are harmless too.
 */
export function outcomeUnknown(client: Pick<Client, 'getTransactionStatus'>, text: string): boolean {
  const head = text.trimStart().toLowerCase();
  // The status of the last ReadyForQuery: 'I' outside a transaction block, 'T' in one, 'E' in a failed one.
  const status = client.getTransactionStatus?.();
  if (/^(commit|end)\b/.test(head)) return status !== 'E'; // a failed transaction's COMMIT rolls back
  if (status !== 'I') return false;
  return !NO_CHANGE.test(head) || (head.startsWith('select') && CALLS_WRITER.test(text));
}

/** Closes the connection's socket: its statements fail with `message` (code `ETIMEDOUT`), the client ends. */
function destroy(client: Client, message: string): void {
  const err = Object.assign(new Error(message), { code: 'ETIMEDOUT' });
  (client as unknown as { connection?: { stream?: { destroy(err?: Error): void } } }).connection?.stream?.destroy(err);
}

/** Whether the server answers a new connection: one check at a time, at most once a second. */
class Liveness {
  last: { startedAt: number; answered: boolean } | null = null;
  private running = false;

  constructor(
    private readonly pool: Pool,
    private readonly connectMs: number,
  ) {}

  check(): void {
    if (this.running || (this.last && Date.now() - this.last.startedAt < PROBE_EVERY_MS)) return;
    this.running = true;
    const startedAt = Date.now();
    void this.answers().then((answered) => {
      this.last = { startedAt, answered };
      this.running = false;
    });
  }

  private async answers(): Promise<boolean> {
    const { Client: ClientClass, options } = this.pool as unknown as {
      Client: new (options: object) => Client;
      options: { password?: unknown };
    };
    // pg-pool keeps the password as a non-enumerable property (so it stays out of logs): a spread leaves it behind,
    // and a pool given its password apart from a URL (MikroORM's) would get a probe that never signs in, so that every
    // long statement was ended as soon as it passed the ordinary bound.
    const client = new ClientClass({
      ...options,
      password: options.password,
      connectionTimeoutMillis: this.connectMs,
      statement_timeout: 1000,
    });
    client.on('error', () => undefined);
    const timer = setTimeout(() => destroy(client, 'no answer'), this.connectMs + 1500);
    try {
      await client.connect();
      await client.query('select 1');
      return true;
    } catch (err) {
      // An error from the server itself (too many connections, starting up) means it answers.
      return (
        typeof (err as { code?: unknown }).code === 'string' && /^[0-9A-Z]{5}$/.test((err as { code: string }).code)
      );
    } finally {
      clearTimeout(timer);
      void client.end().catch(() => undefined);
    }
  }
}
