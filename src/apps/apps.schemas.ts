import { z } from 'zod';
import { httpUrl } from '../http/schemas.js';

/** App ids are generated (`app_` and 20 letters or digits); anything else names no app (401, or 404 for the admin). */
export const appIdParams = z.object({
  appId: z
    .string()
    .min(1)
    .max(100)
    .regex(/^app_[A-Za-z0-9]+$/, 'must be an app id (app_ and letters or digits)')
    .describe(
      "The app's id (`app_` and letters or digits). One of another form names no app: with a credential the answer " +
        'is that of an app the credential does not reach (401; 404 for the admin key), on an open route a 400.',
    ),
});

export const createAppBody = z.object({
  name: z.string().trim().min(1, 'must not be empty').max(200),
  plan: z.string().trim().min(1).max(100).optional(),
});

/**
 * Key fields are ignored by PATCH (the spec's words): a client may send back the record it read. Any value is
 * accepted and dropped; the keys change only through their regenerate routes.
 */
const ignoredKey = (route: string) =>
  z
    .unknown()
    .optional()
    .meta({ deprecated: true, description: `Ignored: the key is not changed (replace it with ${route})` });

export const PLAN_CHANGE_POLICIES = ['prorate_now', 'at_renewal', 'no_proration'] as const;
const planChangePolicy = z.enum(PLAN_CHANGE_POLICIES);
/** Defaults, as Stripe's and Paddle's sellers most often set them: upgrades now with proration, downgrades at renewal. */
export const DEFAULT_PLAN_CHANGE_POLICY = { upgrade: 'prorate_now', downgrade: 'at_renewal' } as const;

export const DUNNING_AFTER = ['cancel', 'free_plan'] as const;
/** How many days of grace a past-due subscription gets at most (PayPal's own retries end after 10). */
export const MAX_GRACE_DAYS = 60;

/** Merge: only the sent fields change; the key fields are ignored; any other unknown field is a 400. */
export const updateAppBody = z.object({
  name: z
    .string()
    .trim()
    .min(1, 'must not be empty')
    .max(200)
    .optional()
    .describe("The app's new name, e.g. `Acme Cloud`. Omitted: unchanged."),
  plan: z.string().trim().min(1).max(100).nullable().optional(),
  checkout_url: httpUrl.nullable().optional(),
  /** Per direction; a direction left out keeps its setting, null restores the defaults. */
  plan_change_policy: z
    .object({ upgrade: planChangePolicy.optional(), downgrade: planChangePolicy.optional() })
    .nullable()
    .optional(),
  /** What a failed renewal payment leads to; a field left out keeps its setting, null restores the defaults. */
  dunning: z
    .object({
      grace_days: z
        .number()
        .int()
        .min(1)
        .max(MAX_GRACE_DAYS)
        .optional()
        .describe(
          'Days a past-due subscription keeps its plan while the provider retries (PayPal: 5 and 10 days after the ' +
            'failure), 1 to 60; default 14.',
        ),
      after: z
        .enum(DUNNING_AFTER)
        .optional()
        .describe(
          'At the end of the grace period with the payment still failing: `cancel` (default: cancelled at the ' +
            'provider, the account on the free plan) or `free_plan` (the account on the free plan, the subscription ' +
            'kept past due: its plan comes back when a later payment succeeds).',
        ),
    })
    .nullable()
    .optional(),
  api_key: ignoredKey('`POST /apps/{appId}/keys/regenerate`'),
  public_key: ignoredKey('`POST /apps/{appId}/public-key/regenerate`'),
  publishable_first_used_at: z.unknown().optional().meta({
    deprecated: true,
    description: 'Ignored: set by the service at the first request with the publishable key from a web page',
  }),
});

export const appSchema = z.object({
  id: z.string(),
  name: z.string(),
  plan: z.string().nullable(),
  api_key: z.string(),
  public_key: z.string(),
  checkout_url: z.string().nullable(),
  /** How plan changes are billed: `prorate_now`, `at_renewal` or `no_proration` per direction (with defaults). */
  plan_change_policy: z.object({ upgrade: planChangePolicy, downgrade: planChangePolicy }),
  /**
   * Dunning: how long a subscription whose renewal payment failed keeps its plan (`grace_days`), and what follows
   * (`after`); applies to subscriptions that fall past due from then on.
   */
  dunning: z.object({ grace_days: z.number().int(), after: z.enum(DUNNING_AFTER) }),
  publishable_first_used_at: z
    .string()
    .nullable()
    .describe(
      'The first request made with the publishable key from a web page (a browser sending an `Origin` of another ' +
        "site than this service's: the components embedded), or null until then. Server-side calls do not count.",
    ),
  created_at: z.string(),
});
