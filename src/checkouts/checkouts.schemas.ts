import { z } from 'zod';
import { appIdParams } from '../apps/apps.schemas.js';
import { cursorQuery } from '../http/pagination.js';
import { accountId, callerId, callerIdText, httpUrl } from '../http/schemas.js';
import { normalizeId } from '../ids.js';
import { changeSchema } from '../subscriptions/subscriptions.schemas.js';

/** An email address within RFC 5321's lengths (local part 64, whole address 254), as the document's format says. */
const email = z
  .email()
  .max(254)
  .refine((v) => v.indexOf('@') <= 64, 'must be an email address (local part at most 64 characters)');

/** What a checkout for a buyer who already subscribes does (both checkout bodies take it). */
const ifSubscribed = z
  .enum(['refuse', 'change'])
  .optional()
  .describe(
    'When the buyer (`account`, or `email`) already has a live subscription: `refuse` (the default) answers 409 ' +
      '`already_subscribed`; `change` answers the plan change to this plan and interval instead (the change ' +
      'route\'s answer with `object: "plan_change"` and its `approve_url`), billed at the plan\'s regular price; ' +
      'secret key only (403 with the publishable key).',
  );

/** Where the buyer lands after the provider (docs/decisions/0365-where-a-buyer-lands-when-nobody-named-a-page.md). */
const returnUrl = httpUrl
  .optional()
  .describe(
    "Where the buyer lands after approving, e.g. `https://app.example/thanks`. Omitted: the app's `checkout_url`, " +
      "else the service's own return page.",
  );
const cancelUrl = httpUrl
  .optional()
  .describe(
    'Where the buyer lands after cancelling at the provider. Omitted: `return_url`, else `checkout_url`, else the ' +
      "service's own page.",
  );

export const offerCheckoutBody = z.object({
  plan: callerId,
  interval: z.enum(['month', 'year']),
  currency: z
    .string()
    .regex(/^[A-Za-z]{3}$/)
    .transform((c) => c.toUpperCase())
    .optional(),
  // A bump listed twice would be priced (and charged) twice: the same text twice is a 400 (`uniqueItems`), and two
  // spellings of one id (`Priority`, `priority`) name that one bump once.
  bumps: z
    .array(callerIdText)
    .max(10)
    .refine((bs) => new Set(bs).size === bs.length, 'must not list a bump twice')
    .meta({ uniqueItems: true })
    .transform((bs) => [...new Set(bs.map(normalizeId))])
    .optional()
    .describe('Order bumps to add, by id, each once, e.g. `["priority"]`. Omitted: none.'),
  account: accountId.optional(),
  email: email.optional(),
  ref: z.string().max(200).optional(),
  return_url: returnUrl,
  cancel_url: cancelUrl,
  if_subscribed: ifSubscribed,
});
export const checkoutParams = appIdParams.extend({ checkoutId: z.string().min(1).max(255) });
export const listQuery = cursorQuery(50, 100).extend({
  offer: z.string().max(255).optional(),
  status: z.enum(['created', 'completed', 'cancelled', 'expired']).optional(),
});

export const planCheckoutBody = z.object({
  interval: z.enum(['month', 'year']).optional(),
  account: accountId.optional(),
  email: email.optional(),
  ref: z.string().max(200).optional(),
  return_url: returnUrl,
  cancel_url: cancelUrl,
  if_subscribed: ifSubscribed,
});

/** A checkout, as presentCheckout shows it. */
export const checkoutSchema = z.object({
  /** What the answer is: tells a checkout from the plan change a checkout route may answer instead. */
  object: z.literal('checkout').describe('This answer is a checkout (a plan change says `object: "plan_change"`)'),
  id: z.string(),
  status: z.enum(['created', 'completed', 'cancelled', 'expired']),
  offer: z.string().nullable(),
  plan: z.string(),
  interval: z.enum(['month', 'year']),
  currency: z.string(),
  price: z.number(),
  list_price: z.number(),
  cycles: z.number().nullable(),
  extras: z.object({
    entitlements: z.array(z.object({ id: z.string(), max: z.number().nullable() })),
    addons: z.array(z.string()),
    cycles: z.number().nullable(),
  }),
  bumps: z.array(z.object({ id: z.string(), name: z.string(), price: z.number(), currency: z.string() })),
  account: z.string().nullable(),
  email: z.string().nullable(),
  ref: z.string().nullable(),
  approve_url: z.string().nullable(),
  bump_approve_url: z.string().nullable(),
  created_at: z.string(),
  completed_at: z.string().nullable(),
  /** Why a checkout ended `cancelled` (the buyer turned it down, or it duplicated a live subscription), else null. */
  cancel_reason: z.string().nullable(),
  /** The checkout's workflow (`checkout/<id>`): every checkout starts one when it is created. */
  workflow_id: z.string().nullable(),
  /**
   * A checkout cancelled as the duplicate of a live subscription: what PayPal had charged for it (the first cycle, at
   * activation) and was refunded. Null for every other checkout.
   */
  refund: z
    .object({
      status: z.enum(['refunded', 'none']),
      amount: z.number(),
      currency: z.string().nullable(),
      payments: z.array(z.object({ payment_id: z.string(), refund_id: z.string(), amount: z.number() })),
      refunded_at: z.string(),
    })
    .nullable(),
  /** `upgrade_link` when a 402 made it for an upgrade; else `checkout`. */
  source: z.enum(['checkout', 'upgrade_link']),
  /**
   * The approval link through the service: send the buyer here rather than to `approve_url`, so the offer funnel
   * counts the checkout when it is opened (it redirects to the provider). Null when the API's origin is unknown.
   */
  open_url: z.string().nullable(),
  opened_at: z.string().nullable(),
});

/**
 * A checkout asked with `if_subscribed: "change"` by a buyer who already has a live subscription: the plan change
 * made instead (as `POST .../subscription/change` answers it), marked `object: "plan_change"`.
 */
export const checkoutAsChangeSchema = changeSchema.extend({
  object: z.literal('plan_change').describe('This answer is a plan change, not a checkout'),
});
/** What a checkout route answers: a checkout, or (with `if_subscribed: "change"`) the plan change made instead. */
export const checkoutOrChangeSchema = z.union([checkoutAsChangeSchema, checkoutSchema]);
