import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import type { Requester } from '../../workflows/billing-rules.js';

export type TimelineKind = 'intent' | 'refusal' | 'fact' | 'timer' | 'outcome';

/**
 * One line of an account's billing history: an intent (who asked for what), a refusal, a fact that arrived (a
 * provider notification), a date the actor woke up at, or an outcome (an event the change emitted). Written in the
 * transaction of what it records; deleted with the account.
 */
export const TimelineEntry = defineEntity({
  name: 'TimelineEntry',
  tableName: 'account_timeline',
  properties: {
    id: p.bigint('number').primary().autoincrement(),
    appId: p.string(),
    accountId: p.string(),
    at: p.datetime().onCreate(() => new Date()),
    /** The app's time then (differs from `at` on a test clock that was moved). */
    appTime: p.datetime(),
    kind: p.string().$type<TimelineKind>(),
    type: p.string(),
    summary: p.text(),
    by: p.json<Requester>().nullable(),
    amount: p.json<{ value: number; currency: string }>().nullable(),
    eventId: p.string().nullable(),
    workflowId: p.text().nullable(),
    runId: p.text().nullable(),
    data: p.json<Record<string, unknown>>().nullable(),
  },
});
export type ITimelineEntry = InferEntity<typeof TimelineEntry>;
