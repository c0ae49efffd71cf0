import { z } from 'zod';
import { appIdParams } from '../apps/apps.schemas.js';
import { boundedJson, callerId, limitValue } from '../http/schemas.js';

const name = z.string().trim().min(1, 'must not be empty').max(200);
const text = z.string().max(5000);
/** Plan meta: free-form, re-sent in reads and webhooks, so bounded (see docs/decisions/0011-stored-free-form-json.md). */
export const META_BYTES = 32_768;
const metaMap = boundedJson(z.record(z.string().max(200), z.unknown()), META_BYTES);

const planId = callerId.describe('The plan id, e.g. `pro`.');
const entitlementId = callerId.describe('The entitlement id, e.g. `api_calls`.');
const addonId = callerId.describe('The add-on id, e.g. `priority`.');
const incentiveId = callerId.describe('The incentive id, e.g. `launch`.');
export const planParams = appIdParams.extend({ planId });
export const entitlementParams = appIdParams.extend({ entitlementId });
export const addonParams = appIdParams.extend({ addonId });
export const incentiveParams = appIdParams.extend({ incentiveId });
export const planEntitlementParams = planParams.extend({ entitlementId });
export const planAddonParams = planParams.extend({ addonId });
export const incentiveEntitlementParams = incentiveParams.extend({ entitlementId });
export const incentiveAddonParams = incentiveParams.extend({ addonId });

/** A new record's id: kept lower-case, spaces as `_`, other characters dropped. */
const newId = (what: string, example: string) =>
  callerId.describe(`The new ${what}'s id, e.g. \`${example}\` (letters, digits, _; kept lower-case).`);
const displayName = name.describe('The display name buyers see, e.g. `Pro`. Required on create.');
const description = text
  .nullable()
  .optional()
  .describe('A description buyers may see. Omitted: none on create, unchanged on update; null clears it.');

/** Known pricing card fields are checked; other keys a pricing page needs are kept as sent. */
export const pricingCardInput = boundedJson(
  z.looseObject({
    title: name.optional().describe('The card title, e.g. `Pro`. Omitted: the plan name.'),
    monthlyPrice: z.number().min(0).optional().describe('Price per month, e.g. 29. Omitted: no monthly price.'),
    yearlyPrice: z.number().min(0).optional().describe('Price per year, e.g. 290. Omitted: no yearly price.'),
    currency: z
      .string()
      .regex(/^[A-Za-z]{3}$/, 'must be a three-letter currency code')
      .transform((c) => c.toUpperCase())
      .optional()
      .describe('Three-letter currency code, e.g. `USD`. Omitted: USD.'),
    isFree: z.boolean().optional().describe('Shown as free. Omitted: false.'),
  }),
  16_384,
);

export const createPlanBody = z.object({
  id: newId('plan', 'pro'),
  name: displayName,
  description,
  note: text
    .nullable()
    .optional()
    .describe('An internal note, never shown to buyers. Omitted: none on create, unchanged on update.'),
  isFree: z
    .boolean()
    .optional()
    .describe('Whether this is the free plan accounts get when created without one. Omitted: false.'),
  pricingCard: pricingCardInput
    .nullable()
    .optional()
    .describe('What the pricing table shows and checkouts charge. Omitted: no card (not for sale); null removes it.'),
  meta: metaMap
    .optional()
    .describe('Free-form JSON read with the plan, e.g. `{ "color": "blue" }`, at most 32 KB. Omitted: `{}`.'),
  privateMetaKeys: z
    .array(z.string())
    .optional()
    .describe('Meta keys hidden from the publishable key and public reads, e.g. `["cost"]`. Omitted: none.'),
});
export const updatePlanBody = createPlanBody.omit({ id: true }).partial();
/** Keys to merge into `meta`; a key sent as null is removed (JSON merge patch). */
export const planMetaBody = metaMap.describe(
  'Keys to merge into the plan meta, e.g. `{ "badge": "popular" }`; a key set to null is removed.',
);

const maxValue = limitValue.describe('The limit, e.g. 1000; null for unlimited.');
export const limitAttachBody = z.object({
  id: callerId.describe('The entitlement to attach, e.g. `api_calls`.'),
  max: maxValue.optional().describe('The limit, e.g. 1000; null for unlimited. Omitted: unlimited.'),
});
export const limitBody = z.object({ max: maxValue });
export const idBody = z.object({ id: callerId.describe('The add-on id, e.g. `priority`.') });

export const overageInput = z
  .object({
    mode: z
      .enum(['allow', 'block'])
      .describe('`block`: a call past the limit is refused with 402; `allow`: it counts on.'),
    offer_id: z
      .string()
      .max(255)
      .nullable()
      .optional()
      .describe("The offer whose price the 402's upgrade uses, e.g. `more_seats`. Omitted or null: regular prices."),
  })
  .describe('What happens past the limit, e.g. `{ "mode": "block" }`. Omitted: allow on create, unchanged on update.');
/** The most credits one unit of a feature may cost, and the largest rollover cap: amounts stay exact in bigint. */
export const CREDIT_COST_MAX = 1_000_000;
/**
 * `credits` on an entitlement. On a `usage` entitlement: the pool it draws from and the cost per unit. On a `credits`
 * pool: its rollover and whether it is kept per entity. The service checks which fits which type (400).
 */
export const creditsInput = z
  .strictObject({
    pool: callerId
      .optional()
      .describe('A usage entitlement: the pool (an entitlement of type `credits`) it draws from, e.g. `credits`.'),
    cost: z
      .number()
      .int()
      .min(1)
      .max(CREDIT_COST_MAX)
      .optional()
      .describe(`A usage entitlement: credits one unit costs, an integer from 1 to ${CREDIT_COST_MAX}, e.g. 10.`),
    rollover: z
      .union([
        z.literal('none'),
        z.strictObject({
          cap: z.number().int().min(0).max(1e12).describe('The most unused plan credits kept, e.g. 5000.'),
        }),
      ])
      .optional()
      .describe(
        'A pool: what unused plan credits do at the period end: `none` (they expire) or `{ "cap": 5000 }` (kept up ' +
          'to the cap). Omitted: `none` on create, unchanged on update.',
      ),
    per: z
      .enum(['account', 'entity'])
      .optional()
      .describe(
        'A pool: `entity` keeps a balance per registered entity (calls name the `entity`; the plan grants its ' +
          'limit to each). 409 when changed under balances. Omitted: `account`.',
      ),
  })
  .describe(
    'Credits. On a `usage` entitlement: `{ "pool": "credits", "cost": 10 }` draws `amount x cost` from the pool on ' +
      'every usage call (null stops drawing). On a `credits` pool: `{ "rollover": { "cap": 5000 }, "per": ' +
      '"entity" }`.',
  );
export const createEntitlementBody = z.object({
  id: newId('entitlement', 'api_calls'),
  type: z
    .enum(['usage', 'boolean', 'credits'])
    .describe(
      '`usage`: counted against a limit per plan; `boolean`: a feature a plan has or lacks; `credits`: a pool of ' +
        "credits that usage entitlements draw from (a plan's limit on it is the credits it grants each month).",
    ),
  name: displayName,
  description,
  overage: overageInput.optional(),
  credits: creditsInput.optional(),
  counts: z
    .literal('entities')
    .nullable()
    .optional()
    .describe(
      "A usage entitlement: `entities` makes its counter the number of registered entities (the plan's seats): " +
        'registering one adds 1 (402 past a blocking limit), deleting one takes 1 off; usage calls on it are a 400. ' +
        'One per app (409). Omitted or null: it counts calls.',
    ),
  per: z
    .enum(['account', 'entity'])
    .optional()
    .describe(
      "A usage entitlement: `entity` keeps a counter per registered entity (the plan's limit on each; calls name " +
        'it). 409 when changed under counters. Omitted: `account`.',
    ),
});
export const updateEntitlementBody = z.object({
  name: displayName.optional(),
  description,
  overage: overageInput.optional(),
  credits: creditsInput.nullable().optional(),
  counts: createEntitlementBody.shape.counts.describe(
    '`entities`: the counter becomes the number of registered entities (set it before any are registered: the ' +
      'counter is not recounted); null: usage calls count again. Omitted: unchanged.',
  ),
  per: createEntitlementBody.shape.per,
});

export const createAddonBody = z.object({ id: newId('add-on', 'priority'), name: displayName, description });
export const updateAddonBody = createAddonBody.omit({ id: true }).partial();

const overrides = z
  .array(
    z.object({
      id: callerId.describe('The entitlement, e.g. `api_calls`.'),
      max: maxValue.optional().describe('Its limit under the incentive; null or omitted: unlimited.'),
    }),
  )
  .describe(
    'Limits over the plan\'s, e.g. `[{ "id": "api_calls", "max": 5000 }]`. Omitted: none on create, ' +
      'unchanged on update (sent, it replaces the list).',
  );
export const createIncentiveBody = z.object({
  id: newId('incentive', 'launch'),
  name: displayName,
  description,
  entitlements: overrides.optional(),
  addons: z
    .array(callerId)
    .optional()
    .describe(
      'Add-ons the incentive grants, e.g. `["priority"]`. Omitted: none on create, unchanged on update ' +
        '(sent, it replaces the list).',
    ),
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
export const entitlementCreditsSchema = z.union([
  z.object({ pool: z.string(), cost: z.number() }).describe('A usage entitlement drawing from a pool.'),
  z
    .object({
      rollover: z.union([z.literal('none'), z.object({ cap: z.number() })]),
      per: z.enum(['account', 'entity']),
    })
    .describe('A credits pool.'),
]);
export const entitlementSchema = z.object({
  id: z.string(),
  type: z.enum(['usage', 'boolean', 'credits']),
  name: z.string(),
  description: z.string().nullable(),
  overage: z.object({ mode: z.enum(['allow', 'block']), offer_id: z.string().nullable() }),
  /** A pool's settings, or what a usage entitlement draws; null for one that draws nothing. */
  credits: entitlementCreditsSchema.nullable(),
  /** `entities`: the counter is the number of entities registered under the account (the seats). */
  counts: z.literal('entities').nullable(),
  /** A usage entitlement: whose counter it keeps (`entity`: one per registered entity); null for the other types. */
  per: z.enum(['account', 'entity']).nullable(),
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
