import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

/**
 * A Temporal command (start, signal, cancel) written in the same transaction as the change that needs it.
 * Deleted once Temporal has accepted it; the relay retries whatever is left.
 */
export const OutboxEntry = defineEntity({
  name: 'OutboxEntry',
  tableName: 'outbox',
  properties: {
    id: p.bigint('number').primary().autoincrement(),
    kind: p.string(),
    workflowType: p.string().nullable(),
    workflowId: p.string().index(),
    payload: p.json<Record<string, unknown>>(),
    attempts: p.integer().default(0),
    lastError: p.text().nullable(),
    /** The dispatch pass holding the row while `nextAttemptAt` is its lease (null: nobody holds it). */
    claimedBy: p.text().nullable(),
    nextAttemptAt: p
      .datetime()
      .onCreate(() => new Date())
      .index(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type IOutboxEntry = InferEntity<typeof OutboxEntry>;
