import type { EntityManager } from '@mikro-orm/postgresql';
import type { Pool } from 'pg';
import { BatchRolledBack, poolOf, prepared, preparedMany, preparedOnPool } from './sql.js';

/**
 * How many runs of one coalesced statement a process has at the database at once, each a single run or a batch
 * (`DB_COALESCE_IN_FLIGHT`; 0: every run goes alone). Set once at start.
 */
let inFlightLimit = 2;
export function setCoalesceInFlight(n: number): void {
  inFlightLimit = n;
}
/** The most runs one batch carries. */
const COALESCE_MAX_BATCH = 32;

interface Waiting<T> {
  params: readonly unknown[];
  resolve: (rows: T[]) => void;
  reject: (err: unknown) => void;
}

interface State<T> {
  inFlight: number;
  queue: Waiting<T>[];
  /** A drain is due at the end of this turn of the event loop. */
  scheduled: boolean;
}

/**
 * A read-only statement's set form: one statement that answers a whole batch, planned once per connection like the
 * statement itself. `params` turns the batch's parameter lists into its parameters (one array per column, say); it
 * returns every run's rows, each with a column `run`: the run's place in the batch, from 1 (`with ordinality`).
 */
export interface SetForm {
  text: string;
  params: (lists: readonly (readonly unknown[])[]) => unknown[];
}

/** What a process counted since it started: batches sent, the runs they carried, batches run again one by one. */
export interface CoalesceStats {
  batches: number;
  batched: number;
  fallbacks: number;
}

/**
 * A hot statement whose concurrent runs go to the database together (the pattern of group commit, or of DataLoader).
 * A run joins a queue; at the end of the event loop's current turn (`setImmediate`: every request read from the
 * sockets in it has joined by then) and whenever a run comes back, the queue goes out while fewer than
 * `DB_COALESCE_IN_FLIGHT` runs are at the database: a lone run as `prepared` sends it, several as one batch
 * (`preparedMany`: one message, one round trip, one commit), each statement with its own snapshot, as if sent one
 * after another. A request waits at most for the runs ahead of it, as it would for a pool connection. At one request
 * at a time nothing changes but that turn of the loop; under load each request costs the API, the driver and
 * PostgreSQL less (docs/benchmarks.md).
 *
 * `order`, when given, sorts a batch (stably) before it runs: statements that lock rows hold their locks until the
 * batch commits, so every batch must take them in one order, or two could deadlock.
 *
 * `set`, when given (statements that only read), answers a batch with one statement instead of one per run: the
 * database starts one plan, not one per run, and all of them read one snapshot. Each run gets the rows tagged with
 * its place. Should the set statement fail, each run goes again alone (a read can) and gets its own answer.
 *
 * A batch is all or nothing. When PostgreSQL refuses one of its statements and the session lives on (the batch
 * rolled back, nothing of it applied), each run goes again alone and gets its own answer. When the connection is
 * lost instead (the outcome is unknown), its error is every run's answer, as it would be for a single run: running
 * them again could apply a change twice. Inside a transaction, or through `.alone`, a run is a plain `prepared`.
 */
export function coalesced<T>(
  name: string,
  text: string,
  opts: { order?: (params: readonly unknown[]) => string; set?: SetForm } = {},
) {
  const { order, set } = opts;
  const states = new WeakMap<Pool, State<T>>();
  const stats: CoalesceStats = { batches: 0, batched: 0, fallbacks: 0 };

  const alone = (pool: Pool, params: readonly unknown[]) => preparedOnPool<T>(pool, name, text, params);

  /** A batch that could not answer as one (counted as a fallback): each run again alone, for its own answer. */
  const eachAlone = async (pool: Pool, batch: Waiting<T>[]) => {
    stats.fallbacks++;
    await Promise.all(batch.map((w) => alone(pool, w.params).then(w.resolve, w.reject)));
  };

  const runBatch = async (pool: Pool, batch: Waiting<T>[]) => {
    if (batch.length === 1) return alone(pool, batch[0].params).then(batch[0].resolve, batch[0].reject);
    if (order) {
      const keyed = batch.map((w) => ({ w, key: order(w.params) }));
      keyed.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
      batch = keyed.map((k) => k.w);
    }
    stats.batches++;
    stats.batched += batch.length;
    if (set) return runSet(pool, batch, set);
    let results: T[][];
    try {
      results = await preparedMany<T>(
        pool,
        name,
        text,
        batch.map((w) => w.params),
      );
    } catch (err) {
      if (!(err instanceof BatchRolledBack)) return batch.forEach((w) => w.reject(err));
      return eachAlone(pool, batch);
    }
    batch.forEach((w, i) => w.resolve(results[i]));
  };

  const runSet = async (pool: Pool, batch: Waiting<T>[], form: SetForm) => {
    let rows: (T & { run: string | number })[];
    try {
      rows = await preparedOnPool<T & { run: string | number }>(
        pool,
        `${name}_set`,
        form.text,
        form.params(batch.map((w) => w.params)),
      );
    } catch {
      return eachAlone(pool, batch);
    }
    const results = batch.map((): T[] => []);
    for (const { run, ...row } of rows) results[Number(run) - 1].push(row as T);
    batch.forEach((w, i) => w.resolve(results[i]));
  };

  const drain = (pool: Pool, state: State<T>) => {
    while (state.queue.length && state.inFlight < inFlightLimit) {
      const batch = state.queue.splice(0, COALESCE_MAX_BATCH);
      state.inFlight++;
      void runBatch(pool, batch)
        // Anything unforeseen answers the batch's requests rather than leaving them waiting.
        .catch((err: unknown) => batch.forEach((w) => w.reject(err)))
        .finally(() => {
          state.inFlight--;
          drain(pool, state);
        });
    }
  };

  /** The statement on a `pg` pool (the bench runs it so, as its ceiling of the coalesced path). */
  const onPool = (pool: Pool, params: readonly unknown[]): Promise<T[]> => {
    if (inFlightLimit === 0) return alone(pool, params);
    let state = states.get(pool);
    if (!state) states.set(pool, (state = { inFlight: 0, queue: [], scheduled: false }));
    const queued = state;
    const promise = new Promise<T[]>((resolve, reject) => queued.queue.push({ params, resolve, reject }));
    if (!queued.scheduled && queued.inFlight < inFlightLimit) {
      // After the event loop's current poll phase: every request read from the sockets in it has joined by then.
      queued.scheduled = true;
      setImmediate(() => {
        queued.scheduled = false;
        drain(pool, queued);
      });
    }
    return promise;
  };

  /** The statement alone, as `prepared` runs it (never in a batch). */
  const runAlone = (em: EntityManager, params: readonly unknown[]) => prepared<T>(em, name, text, params);
  const run = async (em: EntityManager, params: readonly unknown[]): Promise<T[]> =>
    em.getTransactionContext() ? runAlone(em, params) : onPool(await poolOf(em), params);
  return Object.assign(run, { alone: runAlone, onPool, stats });
}
