import { z } from 'zod';
import { appIdParams } from '../apps/apps.schemas.js';
import { accountId, CALLER_ID_PATTERN, callerId, limitValue, timestamp } from '../http/schemas.js';
import { normalizeId } from '../ids.js';

const currency = z
  .string()
  .regex(/^[A-Za-z]{3}$/, 'must be a three-letter currency code')
  .transform((c) => c.toUpperCase());
const cycles = z.number().int().min(1).max(120).nullable();

export const offerPrice = z.object({
  interval: z.enum(['month', 'year']),
  amount: z.number().min(0).max(10_000_000),
  currency: currency.default('USD'),
  cycles: cycles.optional(),
});
export const offerExtras = z.object({
  entitlements: z
    .array(z.object({ id: callerId, max: limitValue.optional() }))
    .max(50)
    .default([]),
  addons: z.array(callerId).max(50).default([]),
  cycles: cycles.optional(),
});
export const offerPlan = z
  .object({ plan: callerId, prices: z.array(offerPrice).min(1).max(10), extras: offerExtras.optional() })
  .refine((p) => new Set(p.prices.map((x) => `${x.interval}/${x.currency}`)).size === p.prices.length, {
    message: 'must not repeat an interval and currency',
    path: ['prices'],
  });
export const offerBump = z.object({
  id: callerId,
  name: z.string().trim().min(1).max(200),
  addon: callerId,
  price: z.number().min(0).max(10_000_000),
  currency: currency.default('USD'),
});

const fields = {
  name: z.string().trim().min(1, 'must not be empty').max(200),
  description: z.string().max(5000).nullable().optional(),
  plans: z
    .array(offerPlan)
    .min(1)
    .max(20)
    .refine((ps) => new Set(ps.map((p) => p.plan)).size === ps.length, 'must not list a plan twice'),
  bumps: z
    .array(offerBump)
    .max(10)
    .refine((bs) => new Set(bs.map((b) => b.id)).size === bs.length, 'must not repeat a bump id')
    .refine(
      (bs) => new Set(bs.map((b) => b.currency)).size <= 1,
      'must all be in one currency (they are paid as one order)',
    )
    .optional(),
  starts_at: timestamp.nullable().optional(),
  expires_at: timestamp.nullable().optional(),
  fallback: callerId.nullable().optional(),
};

/** Shareable: the caller's `id` is the slug. Targeted: `account_id`, and the service picks an unguessable id. */
export const createOfferBody = z
  .object({ id: callerId.optional(), account_id: accountId.optional(), ...fields })
  .refine((o) => (o.id === undefined) !== (o.account_id === undefined), {
    message: 'a shareable offer takes an id, a targeted offer an account_id (not both)',
    path: ['id'],
  })
  .meta({ oneOf: [{ required: ['id'] }, { required: ['account_id'] }] });
export const updateOfferBody = z.object(fields).partial();
/**
 * An offer id in a path: normalized like every caller-chosen id (`Spring-Sale` is `springsale`), except a
 * generated id (`ofr_` and 20 letters or digits), which is kept as it is.
 */
export const offerIdParam = z
  .string()
  .max(200)
  .regex(/[A-Za-z0-9_ ]/, 'must contain a letter, a digit or an underscore')
  .meta({ pattern: CALLER_ID_PATTERN })
  .transform((v) => (/^ofr_[A-Za-z0-9]{20}$/.test(v) ? v : normalizeId(v)));
export const offerParams = appIdParams.extend({
  offerId: offerIdParam.describe('The offer id, e.g. `spring_sale`; an unknown one shows the regular prices.'),
});
export const publicQuery = z.object({
  fallback: z
    .string()
    .max(255)
    .optional()
    .describe("Another offer's id, shown when this one cannot be bought now. Omitted: the offer's own fallback."),
  account: z.string().max(255).optional().describe('The buyer, for a targeted offer, e.g. `alice`. Omitted: anyone.'),
  ref: z.string().max(200).optional(),
});
export const previewBody = z.object({ account: accountId.optional() });

// ---- responses ------------------------------------------------------------------------------------

const intervalSchema = z.enum(['month', 'year']);
const extrasSchema = z.object({
  entitlements: z.array(z.object({ id: z.string(), max: z.number().nullable() })),
  addons: z.array(z.string()),
  cycles: z.number().nullable(),
});
const bumpSchema = z.object({ id: z.string(), name: z.string(), price: z.number(), currency: z.string() });

/** An offer, as presentOffer shows it. */
export const offerSchema = z.object({
  id: z.string(),
  kind: z.enum(['shareable', 'targeted']),
  account_id: z.string().nullable(),
  name: z.string(),
  description: z.string().nullable(),
  status: z.enum(['draft', 'active', 'archived']),
  live_status: z.enum(['draft', 'scheduled', 'active', 'expired', 'archived']),
  plans: z.array(
    z.object({
      plan: z.string(),
      prices: z.array(
        z.object({ interval: intervalSchema, currency: z.string(), amount: z.number(), cycles: z.number().nullable() }),
      ),
      extras: extrasSchema,
    }),
  ),
  bumps: z.array(bumpSchema.extend({ addon: z.string() })),
  starts_at: z.string().nullable(),
  expires_at: z.string().nullable(),
  fallback: z.string().nullable(),
  redemptions: z.number(),
  views: z.number(),
  published: z.boolean(),
  published_at: z.string().nullable(),
  archived_at: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});

/** A plan as a buyer sees it: prices (offer and list price), extras and the limits it grants. */
const publicPlanSchema = z.object({
  plan: z.object({ id: z.string(), name: z.string(), description: z.string().nullable() }),
  prices: z.array(
    z.object({
      interval: intervalSchema,
      currency: z.string(),
      price: z.number(),
      list_price: z.number(),
      cycles: z.number().nullable(),
    }),
  ),
  extras: extrasSchema,
  /** What the plan grants (with the offer's extras): `max` null is unlimited; a `boolean` one is a switch, on. */
  entitlements: z.array(
    z.object({
      id: z.string(),
      name: z.string(),
      type: z.enum(['usage', 'boolean', 'credits']),
      max: z.number().nullable(),
    }),
  ),
});

/** What a checkout page shows: the offer (or its fallback, or the regular prices). */
export const publicOfferSchema = z.object({
  source: z.enum(['offer', 'fallback', 'regular']),
  offer: z
    .object({ id: z.string(), name: z.string(), description: z.string().nullable(), expires_at: z.string().nullable() })
    .nullable(),
  plans: z.array(publicPlanSchema),
  bumps: z.array(bumpSchema),
  ref: z.string().nullable(),
});

/** An offer's plans and, for an account, how each would change its limits. */
export const offerPreviewSchema = z.object({
  offer: offerSchema,
  account: z.object({ id: z.string(), plan: z.string() }).nullable(),
  plans: z.array(
    publicPlanSchema.extend({
      changes: z
        .array(z.object({ entitlement: z.string(), current: z.number().nullable(), new: z.number().nullable() }))
        .optional(),
    }),
  ),
});

const revenueSchema = z.record(z.string(), z.number());
const groupSchema = { checkouts: z.number(), completed: z.number(), revenue: revenueSchema };
export const offerStatsSchema = z.object({
  offer: z.string(),
  views: z.number(),
  /** Checkouts a buyer opened (their approval link, `open_url`) or completed; not those only prepared. */
  checkouts: z.number(),
  completed: z.number(),
  conversion: z.number(),
  /** Every checkout made for the offer, opened or not (402 upgrade links included). */
  prepared: z.number(),
  /** Checkouts a 402 made for an upgrade through this offer: prepared, opened, completed (also in the totals). */
  upgrade_links: z.object({ prepared: z.number(), opened: z.number(), completed: z.number() }),
  revenue: revenueSchema,
  by_plan: z.array(z.object({ plan: z.string(), ...groupSchema })),
  by_ref: z.array(z.object({ ref: z.string(), ...groupSchema })),
  by_bump: z.array(z.object({ bump: z.string(), completed: z.number(), revenue: revenueSchema })),
});
