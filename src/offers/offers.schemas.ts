import { z } from 'zod';
import { appIdParams } from '../apps/apps.schemas.js';
import { accountId, callerId, limitValue, timestamp } from '../http/schemas.js';

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
  });
export const updateOfferBody = z.object(fields).partial();
export const offerParams = appIdParams.extend({ offerId: z.string().min(1).max(255) });
export const publicQuery = z.object({
  fallback: z.string().max(255).optional(),
  account: z.string().max(255).optional(),
  ref: z.string().max(200).optional(),
});
export const previewBody = z.object({ account: accountId.optional() });
