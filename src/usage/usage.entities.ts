import { defineEntity, p } from '@mikro-orm/core';

/**
 * One counter per account and usage entitlement (a per-entity entitlement: one per entity under the account, the
 * account's own `entityId` being ''); changed only by single atomic SQL statements.
 */
export const UsageCounter = defineEntity({
  name: 'UsageCounter',
  tableName: 'usage_counters',
  properties: {
    appId: p.string().primary(),
    accountId: p.string().primary(),
    entitlementId: p.string().primary(),
    entityId: p.string().primary().default(''),
    count: p.bigint('number'),
    /** Reserved and not yet committed, released or expired; counted against the limit beside `count`. */
    held: p.bigint('number').default(0),
    updatedAt: p.datetime(),
  },
});

/** Every usage change, kept after the account is deleted; analytics reads it. */
export const UsageEvent = defineEntity({
  name: 'UsageEvent',
  tableName: 'usage_events',
  properties: {
    id: p.bigint('number').primary().autoincrement(),
    appId: p.string(),
    accountId: p.string(),
    entitlementId: p.string(),
    /** The entity whose counter moved ('' the account's own). */
    entityId: p.string().default(''),
    amount: p.bigint('number'),
    count: p.bigint('number').nullable(),
    createdAt: p.datetime(),
  },
});
