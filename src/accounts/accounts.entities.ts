import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

export const Account = defineEntity({
  name: 'Account',
  tableName: 'accounts',
  properties: {
    appId: p.string().primary(),
    id: p.string().primary(),
    name: p.text().nullable(),
    planId: p.string(),
    incentiveId: p.string().nullable(),
    incentiveExpiresAt: p.datetime().nullable(),
    /** The offer the account bought through (set by checkouts); null until then. */
    offerId: p.string().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p
      .datetime()
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
});
export type IAccount = InferEntity<typeof Account>;

/** Add-ons an account owns itself (granted by the API or by an order bump). */
export const AccountAddon = defineEntity({
  name: 'AccountAddon',
  tableName: 'account_addons',
  properties: {
    appId: p.string().primary(),
    accountId: p.string().primary(),
    addonId: p.string().primary(),
    source: p.string().default('api'),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});

/**
 * Layer 2 of effective access: entitlement overrides and add-ons an account got with an offer,
 * each until `endsAt` (null: no end). Written by checkout completion; empty until then.
 */
export const AccountExtra = defineEntity({
  name: 'AccountExtra',
  tableName: 'account_extras',
  properties: {
    id: p.bigint('number').primary().autoincrement(),
    appId: p.string(),
    accountId: p.string(),
    offerId: p.string(),
    kind: p.string().$type<'entitlement' | 'addon'>(),
    refId: p.string(),
    max: p.bigint('number').nullable(),
    endsAt: p.datetime().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
