import { defineEntity, p } from '@mikro-orm/core';

/**
 * One pool's balance for an account (or an entity under it; '' is the account's own). Changed only by single SQL
 * statements that hold this row's lock: the hot path's guarded debit, grants, expiry (src/credits/credits.sql.ts).
 */
export const CreditBalance = defineEntity({
  name: 'CreditBalance',
  tableName: 'credit_balances',
  properties: {
    appId: p.string().primary(),
    accountId: p.string().primary(),
    poolId: p.string().primary(),
    entityId: p.string().primary(),
    balance: p.bigint('number'),
    /** Debits not yet taken from particular grants (taken earliest-expiring first when grants matter). */
    unallocated: p.bigint('number').default(0),
    updatedAt: p.datetime(),
  },
});

/** Credits given at once: by the plan for a period, by the API, by a pack, as a refund or a rollover. */
export const CreditGrant = defineEntity({
  name: 'CreditGrant',
  tableName: 'credit_grants',
  properties: {
    id: p.string().primary(),
    appId: p.string(),
    accountId: p.string(),
    poolId: p.string(),
    entityId: p.string(),
    amount: p.bigint('number'),
    remaining: p.bigint('number'),
    expiresAt: p.datetime().nullable(),
    source: p.string().$type<'plan' | 'api' | 'pack' | 'refund' | 'rollover'>(),
    sourceRef: p.text().nullable(),
    reason: p.text().nullable(),
    periodKey: p.text().nullable(),
    createdAt: p.datetime(),
  },
});

/** Every change of a balance, signed; a balance is always its ledger's sum. */
export const CreditLedgerEntry = defineEntity({
  name: 'CreditLedgerEntry',
  tableName: 'credit_ledger',
  properties: {
    id: p.bigint('number').primary().autoincrement(),
    appId: p.string(),
    accountId: p.string(),
    poolId: p.string(),
    entityId: p.string(),
    grantId: p.string().nullable(),
    amount: p.bigint('number'),
    kind: p.string().$type<'grant' | 'debit' | 'expiry' | 'refund' | 'reversal' | 'topup'>(),
    feature: p.string().nullable(),
    requestId: p.string().nullable(),
    idempotencyKey: p.blob().nullable(),
    workflowId: p.string().nullable(),
    /** The provider's payment it comes from: a top-up's capture id, the refund id a reversal takes back for. */
    ref: p.string().nullable(),
    createdAt: p.datetime(),
  },
});

/** An entity under an account (a user, a workspace, a project): its own balance in each per-entity pool. */
export const AccountEntity = defineEntity({
  name: 'AccountEntity',
  tableName: 'account_entities',
  properties: {
    appId: p.string().primary(),
    accountId: p.string().primary(),
    id: p.string().primary(),
    name: p.text().nullable(),
    createdAt: p.datetime(),
  },
});
