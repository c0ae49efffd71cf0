import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

/** The event log: one row per event, written in the transaction of the change it describes. */
export const Event = defineEntity({
  name: 'Event',
  tableName: 'events',
  properties: {
    id: p.string().primary(),
    appId: p.string(),
    type: p.string(),
    data: p.json<Record<string, unknown>>(),
    createdAt: p.datetime(),
    /** Set on events written by SQL (usage thresholds) whose webhook fan-out is still to do. */
    fanoutPending: p.boolean().default(false),
  },
});
export type IEvent = InferEntity<typeof Event>;
