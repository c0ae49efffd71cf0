// Credit top-up packs: what the routes take and answer (issue 42, item 4).
import { z } from 'zod';
import { appIdParams } from '../apps/apps.schemas.js';
import { accountId, callerId, httpUrl } from '../http/schemas.js';

export const packParams = appIdParams.extend({
  packId: callerId.describe('The pack id, e.g. `credits_10k` (kept lower-case).'),
});
export const packOrderParams = appIdParams.extend({ orderId: z.string().min(1).max(255) });

/**
 * A price as the rest of the API takes one (a plan's `monthlyPrice`, an offer's `price`): a JSON number; a decimal
 * string such as `"10.00"` (how PayPal writes money) is taken too. Whole cents only: PayPal charges in cents, and a
 * price that cannot be charged exactly is refused rather than rounded
 * (docs/decisions/README.md, "Credits": pack prices).
 */
export const packPrice = z
  .union([
    // The rules in the document too (the refinements below cannot be): above 0, at most 10,000,000, whole cents.
    z.number().gt(0).max(10_000_000).multipleOf(0.01),
    z
      .string()
      .regex(
        /^(?!0+(\.0{1,2})?$)(\d{1,7}(\.\d{1,2})?|10000000(\.0{1,2})?)$/,
        'must be a decimal above 0 and at most 10,000,000 such as "10.00"',
      ),
  ])
  .transform((v) => Number(v))
  .refine((v) => Number.isFinite(v) && v > 0 && v <= 10_000_000, 'must be above 0 and at most 10,000,000')
  .refine((v) => Math.abs(Math.round(v * 100) - v * 100) < 1e-6, 'must be whole cents (at most two decimals)')
  .describe('What the pack costs, e.g. `10` or `"10.00"`: above 0, at most two decimals.');

const currency = z
  .string()
  .regex(/^[A-Za-z]{3}$/, 'must be a three-letter currency code')
  .transform((c) => c.toUpperCase())
  .describe('Three-letter currency code, e.g. `USD` (as a pricing card takes it). Omitted: USD.');

export const createPackBody = z.object({
  id: callerId.describe("The new pack's id, e.g. `credits_10k` (letters, digits, _; kept lower-case)."),
  pool: callerId.describe('The credits pool it tops up: an entitlement of type `credits`, e.g. `credits`.'),
  amount: z.number().int().min(1).max(1e12).describe('Whole credits the pack grants, e.g. 10000.'),
  price: packPrice,
  currency: currency.optional(),
});

export const packSchema = z.object({
  id: z.string(),
  pool: z.string(),
  amount: z.number(),
  price: z.number(),
  currency: z.string(),
  archived: z.boolean().describe('An archived pack is not sold (no new checkouts, not offered in a 402)'),
  archived_at: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});

export const packCheckoutBody = z.object({
  account: accountId.describe('The account that gets the credits, e.g. `alice`.'),
  return_url: httpUrl
    .optional()
    .describe(
      "Where the buyer lands after approving, e.g. `https://app.example/thanks`. Omitted: the app's `checkout_url`, " +
        "else the service's own return page.",
    ),
});

export const packOrderSchema = z.object({
  object: z.literal('credit_pack_order'),
  id: z.string(),
  status: z
    .enum(['created', 'completed', 'cancelled'])
    .describe('`completed` once PayPal confirmed the capture and the credits were granted'),
  pack: z.string(),
  account: z.string(),
  pool: z.string(),
  amount: z.number().describe('Credits the order grants'),
  price: z.number(),
  currency: z.string(),
  approve_url: z.string().nullable().describe("PayPal's approval page: send the buyer here"),
  capture_id: z.string().nullable().describe("PayPal's capture id once paid"),
  grant: z.string().nullable().describe('The credits grant made for it once paid'),
  refunded: z.number().describe('Money refunded at PayPal so far'),
  taken_back: z.number().describe('Credits taken back for those refunds (what was left of them)'),
  created_at: z.string(),
  completed_at: z.string().nullable(),
});
