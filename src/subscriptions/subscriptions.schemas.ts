import { z } from 'zod';
import { cursorPageSchema, cursorQuery } from '../http/pagination.js';
import { callerId } from '../http/schemas.js';

/** A pause whose resume time has passed: what an external scheduler needs to resume it. */
export const duePauseSchema = z.object({
  app_id: z.string(),
  account_id: z.string(),
  resume_at: z.string().nullable(),
  restore_plan: z.string().nullable(),
  /** The pause's number for the account (part of its workflow id). */
  pause: z.number(),
});

/** An account's subscription, as presentSubscription shows it (`id` is the provider's subscription id). */
export const subscriptionSchema = z.object({
  id: z.string(),
  status: z.enum(['active', 'paused', 'cancelled']),
  offer: z.string().nullable(),
  plan: z.string(),
  interval: z.enum(['month', 'year']),
  price: z.number(),
  currency: z.string(),
  renews_at: z.string().nullable(),
  pause: z
    .object({
      paused_at: z.string().nullable(),
      resume_at: z.string().nullable(),
      restore_plan: z.string().nullable(),
      reason: z.string().nullable(),
      /** The pause's workflow (`pause/<app>/<account>/<n>`), which resumes it at `resume_at`. */
      workflow_id: z.string().nullable(),
    })
    .nullable(),
  cancelled_at: z.string().nullable(),
  /** A change that applies at the next renewal. */
  pending_change: z
    .object({
      plan: z.string(),
      interval: z.enum(['month', 'year']),
      price: z.number(),
      currency: z.string(),
      discount: z.object({ percent: z.number(), cycles: z.number(), regular_price: z.number() }).nullable(),
      requested_at: z.string(),
      /** `now`: applies once approved at the provider; `renewal`: approved, it applies at `renews_at`. */
      effective: z.enum(['now', 'renewal']),
      /** When the provider reported the approval of a change that applies at the renewal; null until then. */
      scheduled_at: z.string().nullable(),
      /** The workflow awaiting the buyer's approval (`plan-change/<app>/<account>/<chg>`); null when none was started. */
      workflow_id: z.string().nullable(),
    })
    .nullable(),
  discount: z.object({ percent: z.number(), cycles_left: z.number(), regular_price: z.number() }).nullable(),
  provider_status: z.string().nullable(),
  last_payment_at: z.string().nullable(),
  last_payment_failed_at: z.string().nullable(),
  created_at: z.string(),
});

/** A requested plan change: the subscription with its pending change, and where the buyer approves it. */
export const changeSchema = subscriptionSchema.extend({
  /** Where to send the buyer first: the prorated difference's order (it goes on to the revision), else the revision. */
  approve_url: z.string().nullable(),
  /** The revision's own approval page at the provider. */
  revision_approve_url: z.string().nullable(),
  /** By price per month: more is an upgrade. */
  direction: z.enum(['upgrade', 'downgrade']),
  /** The app's policy for that direction (`plan_change_policy`). */
  policy: z.enum(['prorate_now', 'at_renewal', 'no_proration']),
  effective: z.enum(['now', 'renewal']),
  /** `prorate_now`: the difference for the rest of the cycle, charged as a one-time order; else null. */
  proration: z.object({ amount: z.number(), currency: z.string(), months_left: z.number() }).nullable(),
});

/** The statuses a subscription is stored with. */
export const SUBSCRIPTION_STATUSES = ['active', 'paused', 'cancelled'] as const;

/**
 * `GET /apps/:appId/subscriptions`: as Stripe's subscription list, without `status` it lists the subscriptions
 * that have not ended (active and paused); `all` lists every one.
 */
export const listSubscriptionsQuery = cursorQuery(20, 100).extend({
  status: z
    .enum([...SUBSCRIPTION_STATUSES, 'all'], {
      error: (iss) => `unknown status ${JSON.stringify(iss.input)} (one of ${SUBSCRIPTION_STATUSES.join(', ')}, all)`,
    })
    .optional()
    .describe(
      'active, paused, cancelled, or all; without it, the subscriptions that have not ended (active and paused)',
    ),
  plan: callerId.optional().describe('Only subscriptions to this plan (the paid plan, also while paused)'),
});

/** A subscription in the app-wide list: the account's subscription view with the account it belongs to. */
export const subscriptionListItemSchema = z.object({ account_id: z.string(), ...subscriptionSchema.shape });
export const subscriptionPageSchema = cursorPageSchema(subscriptionListItemSchema);

/** A live provider subscription offerkit made but does not track (found by the reconciler). */
export const untrackedSchema = z.object({
  /** The provider's subscription id. */
  id: z.string(),
  account_id: z.string(),
  checkout_id: z.string().nullable(),
  /** At the provider when found (CANCELLED once the reconciler cancelled it). */
  provider_status: z.string(),
  /** `cancelled`: a duplicate of the account's live subscription, cancelled at the provider; `reported`: left as is. */
  action: z.enum(['cancelled', 'reported']),
  live_subscription_id: z.string().nullable(),
  found_at: z.string(),
});
