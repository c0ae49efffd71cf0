import { z } from 'zod';
import { appIdParams } from '../apps/apps.schemas.js';
import { pageQuery } from '../http/pagination.js';
import { accountId, callerId, timestamp } from '../http/schemas.js';
import { subscriptionSchema } from '../subscriptions/subscriptions.schemas.js';

export const accountParams = appIdParams.extend({
  accountId: accountId.describe('The account id, e.g. `alice`.'),
});
const planRef = callerId.describe(
  "The account's plan, e.g. `pro`. Omitted: the app's free plan on create, unchanged on update.",
);
const incentiveRef = callerId
  .nullable()
  .describe('An incentive to apply, e.g. `launch`; null removes it. Omitted: none on create, unchanged on update.');
const incentiveEnds = timestamp
  .nullable()
  .describe('When the incentive ends (ISO 8601), e.g. `2026-12-31T00:00:00Z`; null or omitted: it does not end.');
const accountName = z
  .string()
  .max(500)
  .nullable()
  .describe('A display name, e.g. `Alice Smith`. Omitted: none on create, unchanged on update.');
export const accountAddonParams = accountParams.extend({ addonId: callerId });

/** An end (a non-null `incentive_expires_at`) needs an incentive: named in the same body (`required`), or not removed. */
export const endNeedsIncentive = (required: boolean) => ({
  dependentSchemas: {
    incentive_expires_at: {
      anyOf: [
        { properties: { incentive_expires_at: { type: 'null' } } },
        { properties: { incentive: { type: 'string' } }, ...(required ? { required: ['incentive'] } : {}) },
      ],
    },
  },
});

export const createAccountBody = z
  .object({
    id: accountId.describe("The new account's id, your product's user or team id, e.g. `alice` (kept as sent)."),
    name: accountName.optional(),
    /** Defaults to the app's free plan when omitted. */
    plan: planRef.optional(),
    incentive: incentiveRef.optional(),
    incentive_expires_at: incentiveEnds.optional(),
  })
  .meta(endNeedsIncentive(true));

export const updateAccountBody = z
  .object({
    name: accountName.optional(),
    plan: planRef.optional(),
    incentive: incentiveRef.optional(),
    incentive_expires_at: incentiveEnds
      .optional()
      .describe(
        'When the incentive ends (ISO 8601), e.g. `2026-12-31T00:00:00Z`; null: it does not end. With `incentive: null` ' +
          'it is a 400; on an account without an incentive (and none given) a 409. Omitted: unchanged.',
      ),
  })
  .meta(endNeedsIncentive(false));

const boolString = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');

const incentiveFilter = callerId.optional().describe('Only accounts with this incentive, e.g. `launch`. Omitted: any.');
export const searchQuery = pageQuery.extend({
  q: z.string().max(200).optional().describe('Text found in the id or name (any case), e.g. `ali`. Omitted: all.'),
  plan: callerId.optional().describe('Only accounts on this plan, e.g. `pro`. Omitted: any plan.'),
  incentive: incentiveFilter,
  offer: z.string().max(255).optional(),
  has_incentive: boolString
    .optional()
    .describe('`true`: only accounts whose incentive still applies; `false`: only those without. Omitted: both.'),
});
export const withIncentiveQuery = pageQuery.extend({ incentive: incentiveFilter });

export const tokenBody = z.object({ ttl_seconds: z.number().int().min(60).max(86_400).default(3600) });

export const accountSchema = z.object({
  id: z.string(),
  app_id: z.string(),
  name: z.string().nullable(),
  plan: z.string(),
  incentive: z.string().nullable(),
  incentive_expires_at: z.string().nullable(),
  /** The account's actor (`account/<app>/<account>`), which removes the incentive at `incentive_expires_at`; null when it does not end. */
  incentive_workflow_id: z.string().nullable(),
  offer: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export const accountDetailSchema = accountSchema.extend({
  addons: z.array(z.string()),
  subscription: subscriptionSchema.nullable(),
});
export const accountPageSchema = z.object({
  data: z.array(accountSchema),
  total: z.number(),
  page: z.number(),
  per_page: z.number(),
});
export const tokenSchema = z.object({ account_id: z.string(), token: z.string(), expires_at: z.string() });

const entry = z.object({
  id: z.string(),
  feature: z.string(),
  name: z.string(),
  type: z.enum(['usage', 'boolean']),
  usage: z.number(),
  max: z.number().nullable(),
  left: z.number().nullable(),
  can: z.boolean(),
  credits: z
    .object({ pool: z.string(), cost: z.number() })
    .optional()
    .describe(
      'A feature that draws from a credits pool: the pool and the credits one unit costs. `can` is false ' +
        "when the pool's balance does not cover one unit.",
    ),
  per_entity: z
    .literal(true)
    .optional()
    .describe(
      'A usage entitlement counted per entity (`per: "entity"`; absent otherwise): with `?entity=` its `usage`, ' +
        "`left` and `can` are that entity's; without, `usage` is 0 and `can` false (whose counter decides is not known).",
    ),
});
const poolEntry = z.object({
  id: z.string(),
  name: z.string(),
  type: z.literal('credits'),
  balance: z.number(),
  granted_per_period: z.number().nullable(),
  unlimited: z.boolean(),
  per_entity: z.boolean(),
});
export const accessSchema = z.object({
  plan: z.object({
    id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    isFree: z.boolean(),
    meta: z.record(z.string(), z.unknown()),
  }),
  incentive: z.string().nullable(),
  offer: z.string().nullable(),
  /** The status of the account's subscription; null when it has none (GET .../subscription is 404 then). */
  subscription_status: z.enum(['active', 'paused', 'past_due', 'cancelled']).nullable(),
  addons: z.array(z.string()),
  entitlements: z.array(entry),
  changes_at: z
    .string()
    .nullable()
    .describe(
      "When this answer next changes by time alone (the incentive's or an offer extra's end); null when nothing " +
        'ends. Until then only a change to the records changes it (each is an event of `GET /apps/{appId}/stream`).',
    ),
  /** Each credits pool the account has (on its plan, or with a balance), with its balance. */
  credits: z.array(poolEntry),
  entity: z
    .string()
    .optional()
    .describe("The entity asked for with `?entity=`: per-entity counters and pool balances are that entity's."),
});
