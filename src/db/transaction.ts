import type { EntityManager } from '@mikro-orm/postgresql';
import { enqueueTemporal, type TemporalCommand } from '../temporal/outbox.js';

/** An event a change emits: recorded and published in the change's transaction, before the commit. */
export interface EmittedEvent {
  appId: string;
  type: string;
  data: Record<string, unknown>;
}

/**
 * Where the events of a change go before its commit. Wired at start-up (src/events/publish.ts records
 * them in the event log and publishes them to their subscribers), so this file knows no domain.
 */
export interface EventSink {
  publish(tx: Tx, events: readonly EmittedEvent[]): Promise<unknown>;
}

/** What a transaction needs from the process: where its events go and who runs its Temporal commands. */
export interface TransactionDeps {
  events: EventSink;
  outbox: { dispatchSoon(ids: number[]): void };
}

export interface Tx {
  em: EntityManager;
  /** Queue a Temporal command; it commits with the change and runs right after the commit. */
  temporal(cmd: TemporalCommand): void;
  /** Emit an event of this change: before the commit it is recorded and published (`deps.events`). */
  emit(appId: string, type: string, data: Record<string, unknown>): void;
}

/**
 * One transaction for a change, its event rows and its outbox rows. After the commit the queued
 * Temporal commands are dispatched in the background (the caller does not wait for Temporal); if
 * that fails (or the process dies first) the relay retries them.
 */
export async function inTransaction<T>(
  deps: TransactionDeps,
  em: EntityManager,
  fn: (tx: Tx) => Promise<T>,
): Promise<T> {
  // Called inside another inTransaction (a service composed into a bigger change): its commands
  // join the outer transaction's list and run after the outer commit, when they are visible.
  const outer = em.isInTransaction() ? outerEntries.get(em.getTransactionContext() as object) : undefined;
  const entries: { id: number }[] = outer ?? [];
  const result = await em.transactional(async (inner) => {
    // Registered under this level's context too, so a part nested deeper still finds the list.
    outerEntries.set(inner.getTransactionContext() as object, entries);
    const events: EmittedEvent[] = [];
    const tx: Tx = {
      em: inner,
      temporal: (cmd) => {
        entries.push(enqueueTemporal(inner, cmd) as unknown as { id: number });
      },
      emit: (appId, type, data) => {
        events.push({ appId, type, data });
      },
    };
    const value = await fn(tx);
    if (events.length > 0) await deps.events.publish(tx, events);
    await inner.flush();
    return value;
  });
  if (!outer) committed.add(em);
  if (!outer && entries.length > 0) {
    // Entries without an id were never flushed (a nested part failed before its flush and the
    // outer change went on). One that was flushed and then rolled back to its savepoint is gone from
    // the table; dispatching its id finds nothing and does nothing.
    const ids = entries.map((e) => Number(e.id)).filter(Number.isFinite);
    // In the background: the caller answers now, and no database connection waits on Temporal.
    if (ids.length > 0) deps.outbox.dispatchSoon(ids);
  }
  return result;
}

/** What ends a dry run's transaction: the change is thrown away, the result kept. */
class DryRunRollback extends Error {}

/**
 * Runs `fn` in a transaction that is always rolled back (an MCP tool's `dry_run`): the changes, their event and
 * outbox rows go, and the Temporal commands queued inside join this transaction's list, which is never dispatched.
 * An error of `fn` comes out as it is (the refusal the call would meet).
 */
export async function rolledBack<T>(em: EntityManager, fn: (em: EntityManager) => Promise<T>): Promise<T> {
  let out: { value: T } | undefined;
  await em
    .transactional(async (inner) => {
      outerEntries.set(inner.getTransactionContext() as object, []);
      out = { value: await fn(inner) };
      throw new DryRunRollback();
    })
    .catch((err: unknown) => {
      if (!(err instanceof DryRunRollback)) throw err;
    });
  return out!.value;
}

/** Outbox entries of each open outermost transaction, by its transaction context. */
const outerEntries = new WeakMap<object, { id: number }[]>();

/** Entity managers (a request's) in which a change has committed: a later outage may follow an applied change. */
const committed = new WeakSet<EntityManager>();

/** Whether a change made with `inTransaction` on `em` has committed. */
export const hasCommitted = (em: EntityManager): boolean => committed.has(em);
