import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

/**
 * What the reconciler has repaired, per kind of waiting row (deliveries, checkouts, pauses,
 * incentives, outbox), since the database was created: the counter operators read.
 */
export const ReconcilerRepair = defineEntity({
  name: 'ReconcilerRepair',
  tableName: 'reconciler_repairs',
  properties: {
    kind: p.string().primary(),
    repaired: p.bigint('number').default(0),
    lastRepairedAt: p.datetime().nullable(),
  },
});
export type IReconcilerRepair = InferEntity<typeof ReconcilerRepair>;
