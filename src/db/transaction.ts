import type { EntityManager } from '@mikro-orm/postgresql';
import type { Deps } from '../deps.js';
import { recordEvent } from '../events/events.service.js';
import { fanOut } from '../webhooks/fanout.js';
import { enqueueTemporal, type TemporalCommand } from '../temporal/outbox.js';

export interface Tx {
  em: EntityManager;
  /** Queue a Temporal command; it commits with the change and runs right after the commit. */
  temporal(cmd: TemporalCommand): void;
  /**
   * Record an event in the event log, in this transaction; before the commit it is fanned out to a
   * delivery (and a delivery workflow start) per subscribed endpoint.
   */
  emit(appId: string, type: string, data: Record<string, unknown>): void;
}

/**
 * One transaction for a change, its event rows and its outbox rows. After the commit the queued
 * Temporal commands are dispatched in the background (the caller does not wait for Temporal); if
 * that fails (or the process dies first) the relay retries them.
 */
export async function inTransaction<T>(
  deps: Pick<Deps, 'outbox' | 'config'>,
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
    const events: { appId: string; type: string; data: Record<string, unknown> }[] = [];
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
    for (const e of events) await fanOut(tx, deps, recordEvent(inner, e.appId, e.type, e.data));
    await inner.flush();
    return value;
  });
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

/** Outbox entries of each open outermost transaction, by its transaction context. */
const outerEntries = new WeakMap<object, { id: number }[]>();
