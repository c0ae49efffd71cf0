import { z } from 'zod';
import { appIdParams } from '../apps/apps.schemas.js';
import { boundedJson, callerId, limitValue } from '../http/schemas.js';

const name = z.string().trim().min(1, 'must not be empty').max(200);
const text = z.string().max(5000);
/** Plan meta: free-form, re-sent in reads and webhooks, so bounded (see docs/decisions.md, Limits). */
export const META_BYTES = 32_768;
const metaMap = boundedJson(z.record(z.string().max(200), z.unknown()), META_BYTES);

export const planParams = appIdParams.extend({ planId: callerId });
export const entitlementParams = appIdParams.extend({ entitlementId: callerId });
export const addonParams = appIdParams.extend({ addonId: callerId });
export const incentiveParams = appIdParams.extend({ incentiveId: callerId });
export const planEntitlementParams = planParams.extend({ entitlementId: callerId });
export const planAddonParams = planParams.extend({ addonId: callerId });
export const incentiveEntitlementParams = incentiveParams.extend({ entitlementId: callerId });
export const incentiveAddonParams = incentiveParams.extend({ addonId: callerId });

/** Known pricing card fields are checked; other keys a pricing page needs are kept as sent. */
export const pricingCardInput = boundedJson(
  z.looseObject({
    title: name.optional(),
    monthlyPrice: z.number().min(0).optional(),
    yearlyPrice: z.number().min(0).optional(),
    currency: z
      .string()
      .regex(/^[A-Za-z]{3}$/, 'must be a three-letter currency code')
      .transform((c) => c.toUpperCase())
      .optional(),
    isFree: z.boolean().optional(),
  }),
  16_384,
);

export const createPlanBody = z.object({
  id: callerId,
  name,
  description: text.nullable().optional(),
  note: text.nullable().optional(),
  isFree: z.boolean().optional(),
  pricingCard: pricingCardInput.nullable().optional(),
  meta: metaMap.optional(),
  privateMetaKeys: z.array(z.string()).optional(),
});
export const updatePlanBody = createPlanBody.omit({ id: true }).partial();
/** Keys to merge into `meta`; a key sent as null is removed (JSON merge patch). */
export const planMetaBody = metaMap;

export const limitAttachBody = z.object({ id: callerId, max: limitValue.optional() });
export const limitBody = z.object({ max: limitValue });
export const idBody = z.object({ id: callerId });

export const overageInput = z.object({
  mode: z.enum(['allow', 'block']),
  offer_id: z.string().max(255).nullable().optional(),
});
export const createEntitlementBody = z.object({
  id: callerId,
  type: z.enum(['usage', 'boolean']),
  name,
  description: text.nullable().optional(),
  overage: overageInput.optional(),
});
export const updateEntitlementBody = z.object({
  name: name.optional(),
  description: text.nullable().optional(),
  overage: overageInput.optional(),
});

export const createAddonBody = z.object({ id: callerId, name, description: text.nullable().optional() });
export const updateAddonBody = createAddonBody.omit({ id: true }).partial();

const overrides = z.array(z.object({ id: callerId, max: limitValue.optional() }));
export const createIncentiveBody = z.object({
  id: callerId,
  name,
  description: text.nullable().optional(),
  entitlements: overrides.optional(),
  addons: z.array(callerId).optional(),
});
/** Merge; `entitlements` and `addons`, when sent, replace the lists. */
export const updateIncentiveBody = createIncentiveBody.omit({ id: true }).partial();

const limitEntry = z.object({ id: z.string(), max: z.number().nullable() });
const stamps = { created_at: z.string(), updated_at: z.string() };
export const pricingCardSchema = z.looseObject({
  plan_id: z.string(),
  title: z.string(),
  monthlyPrice: z.number().optional(),
  yearlyPrice: z.number().optional(),
  currency: z.string().optional(),
  isFree: z.boolean(),
});
export const planSchema = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  note: z.string().nullable(),
  isFree: z.boolean(),
  pricingCard: pricingCardSchema.nullable(),
  meta: metaMap,
  privateMetaKeys: z.array(z.string()),
  entitlements: z.array(limitEntry),
  addons: z.array(z.string()),
  ...stamps,
});
export const entitlementSchema = z.object({
  id: z.string(),
  type: z.enum(['usage', 'boolean']),
  name: z.string(),
  description: z.string().nullable(),
  overage: z.object({ mode: z.enum(['allow', 'block']), offer_id: z.string().nullable() }),
  ...stamps,
});
export const addonSchema = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  ...stamps,
});
export const incentiveSchema = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  entitlements: z.array(limitEntry),
  addons: z.array(z.string()),
  ...stamps,
});
