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
const changeViewSchema = z.object({
  /** `chg_...`: the change's id on the timeline. */
  id: z.string().nullable(),
  /** `awaiting_approval`: the buyer has not approved it at the provider yet; `scheduled`: approved, applies at the renewal. */
  status: z.enum(['awaiting_approval', 'scheduled']),
  /** `change` (asked for), `discount` or `downgrade` (a cancel flow's save), `withdrawal` (undoing a scheduled change). */
  kind: z.enum(['change', 'discount', 'downgrade', 'withdrawal']),
  plan: z.string(),
  interval: z.enum(['month', 'year']),
  price: z.number(),
  currency: z.string(),
  direction: z.enum(['upgrade', 'downgrade']).nullable(),
  discount: z.object({ percent: z.number(), cycles: z.number(), regular_price: z.number() }).nullable(),
  requested_at: z.string(),
  /** `now`: applies once approved at the provider; `renewal`: approved, it applies at `renews_at`. */
  effective: z.enum(['now', 'renewal']),
  /** Until when the buyer may approve it (awaiting only). */
  expires_at: z.string().nullable(),
  /** When the provider reported the approval of a change that applies at the renewal; null until then. */
  scheduled_at: z.string().nullable(),
  /** The account actor that waits on it (`account/<app>/<account>`). */
  workflow_id: z.string().nullable(),
});

export const subscriptionSchema = z.object({
  id: z.string(),
  /** `past_due`: a renewal payment failed and the provider is retrying it (see `dunning`). */
  status: z.enum(['active', 'paused', 'past_due', 'cancelled']),
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
      /** The account actor (`account/<app>/<account>`), which resumes it at `resume_at`. */
      workflow_id: z.string().nullable(),
    })
    .nullable(),
  cancelled_at: z.string().nullable(),
  /** A cancellation asked for the end of the paid period: billing has stopped; the plan stays until then. */
  cancel_at: z.string().nullable(),
  /** The change waiting for the buyer's approval, else the change scheduled for the renewal; null when none. */
  pending_change: changeViewSchema.nullable(),
  /** The change approved for the renewal (also while another change waits for approval to replace it). */
  scheduled_change: changeViewSchema.nullable(),
  /** While `past_due`: since when, how often it failed, the provider's next retry, the grace period and what follows. */
  dunning: z
    .object({
      since: z.string(),
      failures: z.number(),
      next_retry_at: z.string().nullable(),
      grace_ends_at: z.string(),
      after: z.enum(['cancel', 'free_plan']),
      outstanding: z.number().nullable(),
      on_free_plan: z.boolean(),
    })
    .nullable(),
  /** The account actor that owns this subscription over time (`account/<app>/<account>`). */
  workflow_id: z.string(),
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
  /** When the change applies once approved: now (approval time) or the renewal. */
  effective_at: z.string().nullable(),
});

/** What a plan change would be, asked for nothing: POST .../subscription/change/quote. */
export const quoteSchema = z.object({
  plan: z.object({ id: z.string(), name: z.string() }),
  interval: z.enum(['month', 'year']),
  currency: z.string(),
  /** The new price per interval, billed from `effective_at` (a free plan: 0). */
  price: z.number(),
  /** Charged when the buyer approves: the prorated difference (`prorate_now`), else 0. */
  amount_due_now: z.number(),
  direction: z.enum(['upgrade', 'downgrade']),
  policy: z.enum(['prorate_now', 'at_renewal', 'no_proration']),
  effective: z.enum(['now', 'renewal']),
  /** When the new price and plan apply: now (when approved) or the renewal date. */
  effective_at: z.string().nullable(),
  proration: z.object({ amount: z.number(), currency: z.string(), months_left: z.number() }).nullable(),
  /**
   * The time the prorated amount is computed for. Send it back as `proration_date` with the change (within 30
   * minutes) and the provider is asked for exactly `amount_due_now`.
   */
  proration_date: z.string(),
  /** What the account has now. */
  current: z.object({
    plan: z.string(),
    interval: z.enum(['month', 'year']),
    price: z.number(),
    currency: z.string(),
    renews_at: z.string().nullable(),
  }),
  /** A move to a free plan is a cancellation at the end of the period, then the free plan. */
  cancels_at_renewal: z.boolean(),
  /** The scheduled change this one would replace (`replace: true`), if any. */
  replaces: z.object({ id: z.string().nullable(), plan: z.string() }).nullable(),
});

/** The statuses a subscription is stored with. */
export const SUBSCRIPTION_STATUSES = ['active', 'paused', 'past_due', 'cancelled'] as const;

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
      'active, paused, past_due, cancelled, or all; without it, the subscriptions that have not ended (active, paused and past_due)',
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
