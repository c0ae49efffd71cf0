// Publishing: the middle of the one-way event path. A change records its events (Tx.emit, in its
// transaction); publishing hands each one to the subscribers wired at start-up (the webhook fan-out,
// which writes deliveries and the outbox rows that start their workflows). This module knows no
// subscriber: src/runtime.ts passes them in.
import { sql } from '../db/sql.js';
import { inTransaction, type EmittedEvent, type TransactionDeps, type Tx } from '../db/transaction.js';
import type { Orm } from '../db/orm.js';
import type { EventBus } from '../deps.js';
import type { IEvent } from './events.entities.js';
import { recordEvent } from './events.service.js';

/** Acts on a published event inside the event's own transaction (e.g. fans it out to webhook endpoints). */
export type EventSubscriber = (tx: Tx, event: IEvent) => Promise<unknown>;

export class EventPublisher implements EventBus {
  constructor(private readonly subscribers: readonly EventSubscriber[]) {}

  /** Records each event in the event log, in the transaction, and publishes it. */
  async publish(tx: Tx, events: readonly EmittedEvent[]): Promise<void> {
    for (const e of events) await this.publishRecorded(tx, recordEvent(tx.em, e.appId, e.type, e.data));
  }

  /** Publishes an event already in the log (written by SQL) to every subscriber, in the caller's transaction. */
  async publishRecorded(tx: Tx, event: IEvent): Promise<void> {
    for (const subscriber of this.subscribers) await subscriber(tx, event);
  }
}

/**
 * Publishes events written by SQL (usage thresholds) that are still marked `fanout_pending`. Called
 * right after such an event is written, and by the relay for any a crash left behind.
 */
export async function publishPending(
  deps: TransactionDeps & { events: EventBus; orm: Orm },
  eventIds?: string[],
): Promise<number> {
  return inTransaction(deps, deps.orm.em.fork(), async (t) => {
    const rows = await sql<{
      id: string;
      app_id: string;
      type: string;
      data: Record<string, unknown>;
      created_at: Date;
    }>(
      t.em,
      `select id, app_id, type, data, created_at from events
        where fanout_pending ${eventIds ? 'and id = any($1::text[])' : "and created_at < now() - interval '2 seconds'"}
        order by created_at limit 500 for update skip locked`,
      eventIds ? [eventIds] : [],
    );
    for (const r of rows) {
      await deps.events.publishRecorded(t, {
        id: r.id,
        appId: r.app_id,
        type: r.type,
        data: r.data,
        createdAt: r.created_at,
      } as IEvent);
    }
    if (rows.length)
      await sql(t.em, 'update events set fanout_pending = false where id = any($1::text[])', [rows.map((r) => r.id)]);
    return rows.length;
  });
}
