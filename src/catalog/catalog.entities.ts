import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

// Catalog records are keyed by (app_id, id); `seq` (database identity) gives creation order.
const keyed = {
  appId: p.string().primary(),
  id: p.string().primary(),
  seq: p.bigint('number').autoincrement().generated('by default as identity'),
  createdAt: p.datetime().onCreate(() => new Date()),
  updatedAt: p
    .datetime()
    .onCreate(() => new Date())
    .onUpdate(() => new Date()),
};

export interface PricingCard {
  plan_id: string;
  title: string;
  monthlyPrice?: number;
  yearlyPrice?: number;
  currency?: string;
  isFree?: boolean;
  [key: string]: unknown;
}

export const Plan = defineEntity({
  name: 'Plan',
  tableName: 'plans',
  properties: {
    ...keyed,
    name: p.text(),
    description: p.text().nullable(),
    note: p.text().nullable(),
    isFree: p.boolean().default(false),
    pricingCard: p.json<PricingCard>().nullable(),
    meta: p.json<Record<string, unknown>>(),
    privateMetaKeys: p.json<string[]>(),
  },
});
export type IPlan = InferEntity<typeof Plan>;

export const Entitlement = defineEntity({
  name: 'Entitlement',
  tableName: 'entitlements',
  properties: {
    ...keyed,
    type: p.string().$type<'usage' | 'boolean' | 'credits'>(),
    name: p.text(),
    description: p.text().nullable(),
    overageMode: p.string().$type<'allow' | 'block'>().default('allow'),
    overageOfferId: p.string().nullable(),
    /** A usage entitlement that draws from a credits pool: the pool, and the credits one unit costs. */
    creditPoolId: p.string().nullable(),
    creditCost: p.bigint('number').nullable(),
    /** A pool's rollover: how many unused plan credits the next period keeps (null: none). */
    creditRolloverCap: p.bigint('number').nullable(),
    /** A pool kept per entity (a user, a workspace) under the account. */
    creditPerEntity: p.boolean().default(false),
    /** A usage entitlement whose counter is the number of entities registered under the account (the seats). */
    countsEntities: p.boolean().default(false),
    /** A usage entitlement counted per entity under the account (one counter each, the plan's limit on each). */
    usagePerEntity: p.boolean().default(false),
  },
});
export type IEntitlement = InferEntity<typeof Entitlement>;

export const Addon = defineEntity({
  name: 'Addon',
  tableName: 'addons',
  properties: { ...keyed, name: p.text(), description: p.text().nullable() },
});
export type IAddon = InferEntity<typeof Addon>;

export const Incentive = defineEntity({
  name: 'Incentive',
  tableName: 'incentives',
  properties: { ...keyed, name: p.text(), description: p.text().nullable() },
});
export type IIncentive = InferEntity<typeof Incentive>;

/** An entitlement on a plan (layer 1) or an override on an incentive (layer 3); `max` null = unlimited. */
export const PlanEntitlement = defineEntity({
  name: 'PlanEntitlement',
  tableName: 'plan_entitlements',
  properties: {
    appId: p.string().primary(),
    planId: p.string().primary(),
    entitlementId: p.string().primary(),
    max: p.bigint('number').nullable(),
    seq: p.bigint('number').autoincrement().generated('by default as identity'),
  },
});
export type IPlanEntitlement = InferEntity<typeof PlanEntitlement>;

export const PlanAddon = defineEntity({
  name: 'PlanAddon',
  tableName: 'plan_addons',
  properties: {
    appId: p.string().primary(),
    planId: p.string().primary(),
    addonId: p.string().primary(),
    seq: p.bigint('number').autoincrement().generated('by default as identity'),
  },
});

export const IncentiveEntitlement = defineEntity({
  name: 'IncentiveEntitlement',
  tableName: 'incentive_entitlements',
  properties: {
    appId: p.string().primary(),
    incentiveId: p.string().primary(),
    entitlementId: p.string().primary(),
    max: p.bigint('number').nullable(),
    seq: p.bigint('number').autoincrement().generated('by default as identity'),
  },
});

export const IncentiveAddon = defineEntity({
  name: 'IncentiveAddon',
  tableName: 'incentive_addons',
  properties: {
    appId: p.string().primary(),
    incentiveId: p.string().primary(),
    addonId: p.string().primary(),
    seq: p.bigint('number').autoincrement().generated('by default as identity'),
  },
});
